// The FakeApiServer's rules for ResourceClaim status.devices (fake_claim_status.h).
#include "fakes/fake_claim_status.h"

#include <arpa/inet.h>

#include <algorithm>
#include <map>
#include <regex>
#include <vector>

namespace rdmak8s::testing {
namespace {

using nlohmann::json;

bool DnsLabel(const std::string& s) {
  static const std::regex re("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  return !s.empty() && s.size() <= 63 && std::regex_match(s, re);
}
bool DnsSubdomain(const std::string& s, size_t max) {
  static const std::regex re("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
  return !s.empty() && s.size() <= max && std::regex_match(s, re);
}
// validatePoolName: one or more DNS subdomains separated by '/', at most 253 in all.
bool PoolName(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  for (;;) {
    size_t slash = s.find('/', start);
    if (!DnsSubdomain(s.substr(start, slash - start), 253)) return false;
    if (slash == std::string::npos) return true;
    start = slash + 1;
  }
}
bool Uuid(const std::string& s) {
  static const std::regex re("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
  return std::regex_match(s, re);
}
// IsQualifiedName: [prefix/]name, name at most 63 of [A-Za-z0-9._-] starting and ending alnum.
bool QualifiedName(const std::string& s) {
  static const std::regex name("[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?");
  size_t slash = s.find('/');
  std::string n = slash == std::string::npos ? s : s.substr(slash + 1);
  if (slash != std::string::npos && !DnsSubdomain(s.substr(0, slash), 253)) return false;
  return !n.empty() && n.size() <= 63 && std::regex_match(n, name);
}
// IsValidInterfaceAddress: "ip/prefix" with a full address, in canonical form.
bool InterfaceAddress(const std::string& s) {
  size_t slash = s.find('/');
  if (slash == std::string::npos) return false;
  std::string ip = s.substr(0, slash), len = s.substr(slash + 1);
  unsigned char buf[16];
  int family = ip.find(':') == std::string::npos ? AF_INET : AF_INET6;
  if (inet_pton(family, ip.c_str(), buf) != 1) return false;
  if (len.empty() || len.size() > 3 || !std::all_of(len.begin(), len.end(), ::isdigit)) return false;
  int bits = std::stoi(len);
  if (bits > (family == AF_INET ? 32 : 128) || std::to_string(bits) != len) return false;
  char text[INET6_ADDRSTRLEN];
  inet_ntop(family, buf, text, sizeof(text));
  return std::string(text) == ip;
}

std::string Str(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string DeviceId(const json& e) {
  std::string id = Str(e, "driver") + "/" + Str(e, "pool") + "/" + Str(e, "device");
  if (e.contains("shareID") && e["shareID"].is_string()) id += "/" + e["shareID"].get<std::string>();
  return id;
}

const json& DevicesOf(const json& claim) {
  static const json kEmpty = json::array();
  if (!claim.contains("status") || !claim["status"].is_object()) return kEmpty;
  auto it = claim["status"].find("devices");
  return it != claim["status"].end() && it->is_array() ? *it : kEmpty;
}

// Each driver's entries, in order.
std::map<std::string, std::vector<json>> ByDriver(const json& devices) {
  std::map<std::string, std::vector<json>> out;
  for (const auto& e : devices) out[e.is_object() ? Str(e, "driver") : ""].push_back(e);
  return out;
}

void Conditions(const json& e, const std::string& at, std::vector<std::string>& errs) {
  if (!e.contains("conditions") || e["conditions"].is_null()) return;
  const json& cs = e["conditions"];
  if (!cs.is_array()) return errs.push_back(at + ".conditions: must be a list");
  if (cs.size() > 8) {
    errs.push_back(at + ".conditions: Too many: " + std::to_string(cs.size()) + ": must have at most 8 items");
  }
  static const std::regex reason("[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?");
  std::set<std::string> types;
  for (size_t i = 0; i < cs.size(); ++i) {
    const std::string p = at + ".conditions[" + std::to_string(i) + "]";
    const json& c = cs[i];
    const std::string type = Str(c, "type"), status = Str(c, "status"), r = Str(c, "reason");
    if (!QualifiedName(type)) errs.push_back(p + ".type: Invalid value: \"" + type + "\"");
    if (!types.insert(type).second) errs.push_back(p + ".type: Duplicate value: \"" + type + "\"");
    if (status != "True" && status != "False" && status != "Unknown") {
      errs.push_back(p + ".status: Unsupported value: \"" + status + "\"");
    }
    if (Str(c, "lastTransitionTime").empty()) errs.push_back(p + ".lastTransitionTime: Required value");
    if (r.empty()) errs.push_back(p + ".reason: Required value");
    else if (r.size() > 1024 || !std::regex_match(r, reason)) errs.push_back(p + ".reason: Invalid value: \"" + r + "\"");
    if (Str(c, "message").size() > 32768) errs.push_back(p + ".message: Too long: may not be more than 32768 bytes");
  }
}

void NetworkData(const json& e, const std::string& at, std::vector<std::string>& errs) {
  if (!e.contains("networkData") || e["networkData"].is_null()) return;
  const json& n = e["networkData"];
  const std::string p = at + ".networkData";
  if (Str(n, "interfaceName").size() > 256) {
    errs.push_back(p + ".interfaceName: Too long: may not be more than 256 bytes");
  }
  if (Str(n, "hardwareAddress").size() > 128) {
    errs.push_back(p + ".hardwareAddress: Too long: may not be more than 128 bytes");
  }
  if (!n.contains("ips") || !n["ips"].is_array()) return;
  const json& ips = n["ips"];
  if (ips.size() > 16) {
    errs.push_back(p + ".ips: Too many: " + std::to_string(ips.size()) + ": must have at most 16 items");
    return;  // the size check short-circuits, as validateSet's
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < ips.size(); ++i) {
    const std::string ip = ips[i].is_string() ? ips[i].get<std::string>() : ips[i].dump();
    const std::string q = p + ".ips[" + std::to_string(i) + "]";
    if (!InterfaceAddress(ip)) {
      errs.push_back(q + ": Invalid value: \"" + ip + "\": must be a valid address in CIDR form");
    }
    if (!seen.insert(ip).second) errs.push_back(q + ": Duplicate value: \"" + ip + "\"");
  }
}

}  // namespace

std::optional<ClaimStatusRefusal> CheckClaimStatusUpdate(const json& old_claim, const json& new_claim,
                                                         const std::set<std::string>& granted) {
  const json& devices = DevicesOf(new_claim);
  const auto before = ByDriver(DevicesOf(old_claim));
  const auto after = ByDriver(devices);
  std::set<std::string> drivers;
  for (const auto& [d, _] : before) drivers.insert(d);
  for (const auto& [d, _] : after) drivers.insert(d);
  const std::string name = old_claim["metadata"].value("name", "");
  for (const auto& d : drivers) {
    auto b = before.find(d), a = after.find(d);
    const bool same = b != before.end() && a != after.end() ? b->second == a->second
                                                            : b == before.end() && a == after.end();
    if (same || granted.count(d) != 0u) continue;
    return ClaimStatusRefusal{403, "Forbidden",
                              "resourceclaims.resource.k8s.io \"" + name +
                                  "\" is forbidden: changing status.devices requires "
                                  "resource=\"resourceclaims/driver\", verb=\"associated-node:update\", "
                                  "resourceName=\"" + d + "\""};
  }

  std::vector<std::string> errs;
  const json empty = json::object();
  const json& old_status = old_claim.contains("status") ? old_claim["status"] : empty;
  const json& new_status = new_claim.contains("status") && new_claim["status"].is_object() ? new_claim["status"] : empty;
  for (const char* field : {"allocation", "reservedFor"}) {
    if (old_status.value(field, json()) != new_status.value(field, json())) {
      errs.push_back(std::string("status.") + field + ": field is immutable in this fake's status update");
    }
  }
  std::set<std::string> allocated;
  if (old_status.contains("allocation")) {
    for (const auto& r : old_status["allocation"]["devices"].value("results", json::array())) allocated.insert(DeviceId(r));
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < devices.size(); ++i) {
    const std::string at = "status.devices[" + std::to_string(i) + "]";
    const json& e = devices[i];
    if (!e.is_object()) {
      errs.push_back(at + ": must be an object");
      continue;
    }
    if (!DnsSubdomain(Str(e, "driver"), 63)) errs.push_back(at + ".driver: Invalid value: \"" + Str(e, "driver") + "\"");
    if (!PoolName(Str(e, "pool"))) errs.push_back(at + ".pool: Invalid value: \"" + Str(e, "pool") + "\"");
    if (!DnsLabel(Str(e, "device"))) errs.push_back(at + ".device: Invalid value: \"" + Str(e, "device") + "\"");
    if (e.contains("shareID") && !Uuid(Str(e, "shareID"))) {
      errs.push_back(at + ".shareID: Invalid value: \"" + Str(e, "shareID") + "\": must be a lowercase UUID");
    }
    const std::string id = DeviceId(e);
    if (allocated.count(id) == 0u) {
      errs.push_back(at + ": Invalid value: \"" + id + "\": must be an allocated device in the claim");
    }
    if (!seen.insert(id).second) errs.push_back(at + ": Duplicate value: \"" + id + "\"");
    Conditions(e, at, errs);
    if (e.contains("data") && !e["data"].is_null()) {
      if (e["data"].dump().size() > 10240) {
        errs.push_back(at + ".data: Too long: may not be more than 10240 bytes");
      } else if (!e["data"].is_object()) {
        errs.push_back(at + ".data: Invalid value: \"<value omitted>\": must be a valid JSON object");
      }
    }
    NetworkData(e, at, errs);
  }
  if (errs.empty()) return std::nullopt;
  std::string message = "ResourceClaim.resource.k8s.io \"" + name + "\" is invalid: [";
  for (size_t i = 0; i < errs.size(); ++i) message += (i ? ", " : "") + errs[i];
  return ClaimStatusRefusal{422, "Invalid", message + "]"};
}

}  // namespace rdmak8s::testing
