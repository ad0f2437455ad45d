// The strict JSON reader (rdmak8s/base/json_reader.h).
#include "rdmak8s/base/json_reader.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace rdmak8s::json_reader {
namespace {

using nlohmann::json;

// obj[key] when obj is an object; nullptr when absent or null. The caller has checked `obj`.
const json* Find(const json& obj, std::string_view key) {
  auto it = obj.find(std::string(key));
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

// A document built from nlohmann's SAX events (json::sax_parse), so that the parse can stop
// (a handler returning false ends it) at kMaxDepth, and members KeepOnly drops are never
// built. The parse itself is nlohmann's: this only decides where each value goes.
class Builder final : public nlohmann::json_sax<json> {
 public:
  // `keep`: the root's filter; nullptr keeps everything.
  explicit Builder(const KeepOnly::Node* keep) : root_keep_(keep) {}

  json& root() { return root_; }
  const std::string& error() const { return error_; }

  bool null() override { return Value(nullptr); }
  bool boolean(bool v) override { return Value(v); }
  bool number_integer(number_integer_t v) override { return Value(v); }
  bool number_unsigned(number_unsigned_t v) override { return Value(v); }
  bool number_float(number_float_t v, const string_t&) override { return Value(v); }
  bool string(string_t& v) override { return Value(std::move(v)); }
  bool binary(binary_t& v) override { return Value(json::binary(std::move(v))); }
  bool start_object(std::size_t) override { return Open(json::value_t::object); }
  bool start_array(std::size_t) override { return Open(json::value_t::array); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }

  bool key(string_t& k) override {
    if (skipping_ > 0) return true;
    const KeepOnly::Node* keep = open_.back().keep;
    if (keep != nullptr) {
      auto it = keep->members.find(k);
      if (it == keep->members.end()) {
        skip_next_ = true;
        return true;
      }
      keep = it->second.whole ? nullptr : &it->second;
    }
    next_keep_ = keep;
    slot_ = &(*open_.back().value)[k];
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    // nlohmann's message quotes the last token, which may be a megabyte string: cut short.
    constexpr size_t kMaxDetail = 200;
    std::string detail = e.what();
    if (detail.size() > kMaxDetail) detail = detail.substr(0, kMaxDetail) + "...";
    error_ = "not JSON: " + detail;
    return false;
  }

 private:
  struct OpenValue {
    json* value;
    const KeepOnly::Node* keep;   // its members' filter; nullptr: keep all
  };

  // True when the value starting now is (inside) a dropped member: it is not built.
  bool Dropped() {
    if (skipping_ > 0) return true;
    if (!skip_next_) return false;
    skip_next_ = false;
    return true;
  }

  template <typename T>
  bool Value(T&& v) {
    if (!Dropped()) Place(json(std::forward<T>(v)));
    return true;
  }

  // Where a kept value goes: the root, the open list's end, or the member `key` named.
  json* Place(json&& v) {
    if (open_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json& top = *open_.back().value;
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    *slot_ = std::move(v);
    return slot_;
  }

  bool Open(json::value_t type) {
    if (open_.size() + skipping_ >= kMaxDepth) {
      error_ = "nested deeper than " + std::to_string(kMaxDepth) + " levels (json_reader::kMaxDepth)";
      return false;
    }
    if (Dropped()) {
      ++skipping_;
      return true;
    }
    const KeepOnly::Node* keep = open_.empty()                  ? root_keep_
                                 : open_.back().value->is_array() ? open_.back().keep
                                                                  : next_keep_;
    open_.push_back({Place(json(type)), keep});
    return true;
  }

  bool Close() {
    if (skipping_ > 0) {
      --skipping_;
    } else {
      open_.pop_back();
    }
    return true;
  }

  const KeepOnly::Node* const root_keep_;
  json root_;
  std::string error_;
  std::vector<OpenValue> open_;  // the containers being built, innermost last
  json* slot_ = nullptr;         // the member the last kept key made
  const KeepOnly::Node* next_keep_ = nullptr;  // that member's filter
  bool skip_next_ = false;       // the next value is a dropped member's
  size_t skipping_ = 0;          // containers open inside a dropped member
};

}  // namespace

KeepOnly::KeepOnly(std::initializer_list<std::string_view> paths) {
  for (std::string_view path : paths) {
    Node* node = &root_;
    while (!path.empty()) {
      const size_t dot = path.find('.');
      node = &node->members[std::string(path.substr(0, dot))];
      path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
    }
    node->whole = true;
  }
}

Status Invalid(std::string_view path, std::string_view what) {
  return InvalidArgumentError(std::string(path) + ": " + std::string(what));
}

Status NotA(std::string_view path, std::string_view want, const json& got) {
  return Invalid(path, "not " + std::string(want) + " (" + got.type_name() + ")");
}

Status Missing(std::string_view path) { return Invalid(path, "missing"); }

Status CheckKeys(const json& obj, std::string_view path,
                 std::initializer_list<std::string_view> allowed) {
  RDMAK8S_RETURN_IF_ERROR(RequireObject(obj, path));
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (std::find(allowed.begin(), allowed.end(), it.key()) != allowed.end()) continue;
    std::vector<std::string_view> sorted(allowed);
    std::sort(sorted.begin(), sorted.end());
    std::string list;
    for (std::string_view a : sorted) list += (list.empty() ? "" : ", ") + std::string(a);
    return Invalid(Field(path, it.key()), "unknown field (allowed: " + list + ")");
  }
  return Status::Ok();
}

StatusOr<std::vector<std::string>> StringList(const json& v, std::string_view path) {
  if (!v.is_array()) return NotA(path, "a list", v);
  std::vector<std::string> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) return NotA(Index(path, i), "a string", v[i]);
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

std::string Field(std::string_view path, std::string_view key) {
  return std::string(path) + "." + std::string(key);
}

std::string Index(std::string_view path, size_t i) {
  return std::string(path) + "[" + std::to_string(i) + "]";
}

StatusOr<json> Parse(std::string_view text, std::string_view what, const KeepOnly* keep) {
  Builder builder(keep ? &keep->root() : nullptr);
  try {
    if (!json::sax_parse(text, &builder)) return Invalid(what, builder.error());
  } catch (const std::exception& e) {  // an allocation failure: an error, not a crash
    return Invalid(what, std::string("not read: ") + e.what());
  }
  return std::move(builder.root());
}

Status RequireObject(const json& v, std::string_view path) {
  if (!v.is_object()) return NotA(path, "an object", v);
  return Status::Ok();
}

StatusOr<const json*> ObjectAt(const json& obj, std::string_view path, std::string_view key) {
  RDMAK8S_RETURN_IF_ERROR(RequireObject(obj, path));
  const json* v = Find(obj, key);
  if (v && !v->is_object()) return NotA(Field(path, key), "an object", *v);
  return v;
}

StatusOr<const json*> ArrayAt(const json& obj, std::string_view path, std::string_view key) {
  RDMAK8S_RETURN_IF_ERROR(RequireObject(obj, path));
  const json* v = Find(obj, key);
  if (v && !v->is_array()) return NotA(Field(path, key), "a list", *v);
  return v;
}

StatusOr<std::string> StringAt(const json& obj, std::string_view path, std::string_view key,
                               bool required) {
  RDMAK8S_RETURN_IF_ERROR(RequireObject(obj, path));
  const json* v = Find(obj, key);
  if (!v) {
    if (required) return Missing(Field(path, key));
    return std::string();
  }
  if (!v->is_string()) return NotA(Field(path, key), "a string", *v);
  return v->get<std::string>();
}

StatusOr<int64_t> IntAt(const json& obj, std::string_view path, std::string_view key,
                        int64_t default_value) {
  RDMAK8S_RETURN_IF_ERROR(RequireObject(obj, path));
  const json* v = Find(obj, key);
  if (!v) return default_value;
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    return NotA(Field(path, key), "an int64", *v);
  }
  if (v->is_number_integer()) return v->get<int64_t>();
  // 2^63 and above arrive as unsigned: out of the API's int64 range.
  return NotA(Field(path, key), "an int64", *v);
}

StatusOr<bool> BoolAt(const json& obj, std::string_view path, std::string_view key,
                      bool default_value) {
  RDMAK8S_RETURN_IF_ERROR(RequireObject(obj, path));
  const json* v = Find(obj, key);
  if (!v) return default_value;
  if (!v->is_boolean()) return NotA(Field(path, key), "a boolean", *v);
  return v->get<bool>();
}

}  // namespace rdmak8s::json_reader
