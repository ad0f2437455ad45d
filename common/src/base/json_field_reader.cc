#include "rdmak8s/base/json_field_reader.h"

#include "rdmak8s/base/json_reader.h"

namespace rdmak8s::json_reader {

using nlohmann::json;

void FieldReader::Fail(std::string msg) {
  if (!error_) error_ = std::move(msg);
}

std::string FieldReader::String(const json& j, const char* key, std::string_view where) {
  StatusOr<std::string> v = StringAt(j, At(where), key);
  if (!v.ok()) {
    Fail(v.status());
    return "";
  }
  return *v;
}

std::optional<long> FieldReader::Int(const json& j, const char* key, long lo, long hi,
                                     std::string_view where) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  StatusOr<int64_t> v = IntAt(j, At(where), key, 0);
  if (!v.ok()) {
    Fail(v.status());
    return std::nullopt;
  }
  if (*v < lo || *v > hi) {
    Fail(Invalid(Field(At(where), key), "must be an integer in " + std::to_string(lo) + ".." +
                                            std::to_string(hi) + ", not " + std::to_string(*v)));
    return std::nullopt;
  }
  return static_cast<long>(*v);
}

bool FieldReader::Bool(const json& j, const char* key, bool dflt, std::string_view where) {
  StatusOr<bool> v = BoolAt(j, At(where), key, dflt);
  if (!v.ok()) {
    Fail(v.status());
    return dflt;
  }
  return *v;
}

}  // namespace rdmak8s::json_reader
