#include "rdmak8s/qos_policy.h"

#include <exception>

#include "rdmak8s/numbers.h"

namespace rdmak8s {

using nlohmann::json;

namespace {

// The first failure wins; later reads still run but report nothing (as the netconf's reader).
struct QosReader {
  std::optional<std::string> error;

  void Fail(std::string msg) {
    if (!error) error = std::move(msg);
  }
  std::string String(const json& j, const char* key) {
    if (!j.contains(key)) return "";
    if (!j[key].is_string()) {
      Fail(std::string("qos.\"") + key + "\" must be a string");
      return "";
    }
    return j[key].get<std::string>();
  }
  std::optional<long> Int(const json& j, const char* key, long lo, long hi) {
    if (!j.contains(key)) return std::nullopt;
    if (!j[key].is_number_integer() || j[key].get<long>() < lo || j[key].get<long>() > hi) {
      Fail(std::string("qos.\"") + key + "\" must be an integer in " + std::to_string(lo) + ".." +
           std::to_string(hi));
      return std::nullopt;
    }
    return j[key].get<long>();
  }
  bool Bool(const json& j, const char* key, bool dflt) {
    if (!j.contains(key)) return dflt;
    if (!j[key].is_boolean()) {
      Fail(std::string("qos.\"") + key + "\" must be true or false");
      return dflt;
    }
    return j[key].get<bool>();
  }
  std::vector<uint8_t> Priorities(const json& j, const char* key) {
    std::vector<uint8_t> out;
    if (!j.contains(key)) return out;
    if (!j[key].is_array()) {
      Fail(std::string("qos.") + key + " must be an array of priorities 0..7");
      return out;
    }
    for (const auto& p : j[key]) {
      if (!p.is_number_integer() || p.get<long>() < 0 || p.get<long>() > 7) {
        Fail(std::string("qos.") + key + ": " + p.dump() + " is not a priority 0..7");
        return out;
      }
      auto v = static_cast<uint8_t>(p.get<long>());
      bool dup = false;
      for (auto x : out) dup |= x == v;
      if (!dup) out.push_back(v);
    }
    return out;
  }
};

StatusOr<QosPolicy> Parse(const json& q) {
  if (!q.is_object()) return InvalidArgumentError("\"qos\" must be an object");
  QosReader r;
  QosPolicy policy;
  std::string trust = r.String(q, "trust");
  if (!trust.empty()) {
    if (trust != "dscp" && trust != "pcp") r.Fail("qos.trust must be \"dscp\" or \"pcp\"");
    policy.trust = trust;
  }
  policy.pfc = r.Priorities(q, "pfc");
  policy.ecn = r.Priorities(q, "ecn");
  if (q.contains("dscpToPriority")) {
    const json& m = q["dscpToPriority"];
    if (!m.is_object()) {
      r.Fail("qos.dscpToPriority must be an object {\"<dscp>\": <priority>}");
    } else {
      for (const auto& [k, v] : m.items()) {
        StatusOr<uint64_t> dscp = ParseUnsignedInRange(k, "qos.dscpToPriority key", 0, 63);
        if (!dscp.ok()) {
          r.Fail("qos.dscpToPriority: key \"" + k + "\" is not a DSCP 0..63");
          break;
        }
        if (!v.is_number_integer() || v.get<long>() < 0 || v.get<long>() > 7) {
          r.Fail("qos.dscpToPriority[\"" + k + "\"]: " + v.dump() + " is not a priority 0..7");
          break;
        }
        policy.dscp_to_priority[static_cast<uint8_t>(*dscp)] = static_cast<uint8_t>(v.get<long>());
      }
    }
  }
  if (auto v = r.Int(q, "roceTos", 0, 255)) policy.roce_tos = static_cast<uint8_t>(*v);
  if (auto v = r.Int(q, "trafficClass", 0, 255)) policy.traffic_class = static_cast<uint8_t>(*v);
  policy.strict = r.Bool(q, "strict", false);
  if (r.error) return InvalidArgumentError(*r.error);
  return policy;
}

}  // namespace

StatusOr<QosPolicy> ParseQosPolicy(const json& qos) {
  try {
    return Parse(qos);
  } catch (const std::exception& e) {  // nlohmann type errors we did not foresee
    return InvalidArgumentError(std::string("qos: ") + e.what());
  }
}

}  // namespace rdmak8s
