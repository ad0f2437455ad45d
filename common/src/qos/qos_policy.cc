#include "rdmak8s/qos/qos_policy.h"

#include <exception>

#include "rdmak8s/base/json_field_reader.h"
#include "rdmak8s/base/json_reader.h"
#include "rdmak8s/base/numbers.h"

namespace rdmak8s {

using nlohmann::json;

namespace {

// A list of priorities 0..7 at j[key] (duplicates dropped, order kept); the first failure is r's.
std::vector<uint8_t> Priorities(json_reader::FieldReader& r, std::string_view path, const json& j,
                                const char* key) {
  std::vector<uint8_t> out;
  StatusOr<const json*> list = json_reader::ArrayAt(j, path, key);
  if (!list.ok()) {
    r.Fail(list.status());
    return out;
  }
  if (*list == nullptr) return out;
  const std::string at = json_reader::Field(path, key);
  for (size_t i = 0; i < (*list)->size(); ++i) {
    const json& p = (**list)[i];
    if (!p.is_number_integer() || p.get<long>() < 0 || p.get<long>() > 7) {
      r.Fail(json_reader::Invalid(json_reader::Index(at, i), p.dump() + " is not a priority 0..7"));
      return out;
    }
    auto v = static_cast<uint8_t>(p.get<long>());
    bool dup = false;
    for (auto x : out) dup |= x == v;
    if (!dup) out.push_back(v);
  }
  return out;
}

StatusOr<QosPolicy> Parse(const json& q, std::string_view path) {
  RDMAK8S_RETURN_IF_ERROR(json_reader::RequireObject(q, path));
  json_reader::FieldReader r(path);
  QosPolicy policy;
  std::string trust = r.String(q, "trust");
  if (!trust.empty()) {
    if (trust != "dscp" && trust != "pcp") {
      r.Fail(json_reader::Invalid(json_reader::Field(path, "trust"),
                                  "must be \"dscp\" or \"pcp\", not \"" + trust + "\""));
    }
    policy.trust = trust;
  }
  policy.pfc = Priorities(r, path, q, "pfc");
  policy.ecn = Priorities(r, path, q, "ecn");
  StatusOr<const json*> m = json_reader::ObjectAt(q, path, "dscpToPriority");
  if (!m.ok()) {
    r.Fail(m.status());
  } else if (*m != nullptr) {
    const std::string at = json_reader::Field(path, "dscpToPriority");
    for (const auto& [k, v] : (*m)->items()) {
      const std::string field = json_reader::Field(at, k);
      StatusOr<uint64_t> dscp = ParseUnsignedInRange(k, field, 0, 63);
      if (!dscp.ok()) {
        r.Fail(json_reader::Invalid(field, "key \"" + k + "\" is not a DSCP 0..63"));
        break;
      }
      if (!v.is_number_integer() || v.get<long>() < 0 || v.get<long>() > 7) {
        r.Fail(json_reader::Invalid(field, v.dump() + " is not a priority 0..7"));
        break;
      }
      policy.dscp_to_priority[static_cast<uint8_t>(*dscp)] = static_cast<uint8_t>(v.get<long>());
    }
  }
  if (auto v = r.Int(q, "roceTos", 0, 255)) policy.roce_tos = static_cast<uint8_t>(*v);
  if (auto v = r.Int(q, "trafficClass", 0, 255)) policy.traffic_class = static_cast<uint8_t>(*v);
  policy.strict = r.Bool(q, "strict", false);
  if (!r.ok()) return InvalidArgumentError(*r.error());
  return policy;
}

}  // namespace

StatusOr<QosPolicy> ParseQosPolicy(const json& qos, std::string_view path) {
  try {
    return Parse(qos, path);
  } catch (const std::exception& e) {  // nlohmann type errors we did not foresee
    return InvalidArgumentError(std::string(path) + ": " + e.what());
  }
}

}  // namespace rdmak8s
