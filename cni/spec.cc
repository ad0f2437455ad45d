// SPEC.md sections "Parameters", "Error", "Version success", "Result type conversion".
#include "cni/spec.h"

#include <arpa/inet.h>

#include <cctype>
#include <optional>

#include "rdmak8s/base/numbers.h"

namespace rdmak8s::cni {

using nlohmann::json;

std::string ErrorJson(const CniError& e, std::string_view cni_version) {
  json j;
  j["cniVersion"] = cni_version.empty() ? std::string(kLatestVersion) : std::string(cni_version);
  j["code"] = e.code;
  j["msg"] = e.msg;
  if (!e.details.empty()) j["details"] = e.details;
  return j.dump();
}

std::string_view CommandName(Command c) {
  switch (c) {
    case Command::kAdd: return "ADD";
    case Command::kDel: return "DEL";
    case Command::kCheck: return "CHECK";
    case Command::kVersion: return "VERSION";
    case Command::kGc: return "GC";
    case Command::kStatus: return "STATUS";
  }
  return "?";
}

bool ValidContainerId(std::string_view id) {
  if (id.empty() || !std::isalnum(static_cast<unsigned char>(id[0]))) return false;
  for (char c : id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') return false;
  }
  return true;
}

bool ValidNetworkName(std::string_view name) { return ValidContainerId(name); }

bool ValidIfname(std::string_view ifname) {
  if (ifname.empty() || ifname.size() > 15 || ifname == "." || ifname == "..") return false;
  for (char c : ifname) {
    if (c == '/' || c == ':' || std::isspace(static_cast<unsigned char>(c)) || c == '\0') return false;
  }
  return true;
}

std::optional<CniEnv> ParseEnv(const std::function<const char*(const char*)>& get, CniError* err) {
  auto fail = [&](std::string msg) -> std::optional<CniEnv> {
    *err = CniError{kErrInvalidEnv, std::move(msg), ""};
    return std::nullopt;
  };
  const char* cmd = get("CNI_COMMAND");
  if (cmd == nullptr || *cmd == '\0') return fail("required env variable CNI_COMMAND missing");
  CniEnv env;
  const std::string_view c(cmd);
  if (c == "ADD") env.command = Command::kAdd;
  else if (c == "DEL") env.command = Command::kDel;
  else if (c == "CHECK") env.command = Command::kCheck;
  else if (c == "VERSION") env.command = Command::kVersion;
  else if (c == "GC") env.command = Command::kGc;
  else if (c == "STATUS") env.command = Command::kStatus;
  else return fail("unknown CNI_COMMAND " + std::string(c));
  if (env.command == Command::kVersion) return env;

  auto read = [&](const char* name, std::string* out, bool required) -> bool {
    const char* v = get(name);
    if (v != nullptr) *out = v;
    return !required || !out->empty();
  };
  const bool per_container = env.command == Command::kAdd || env.command == Command::kDel ||
                             env.command == Command::kCheck;
  if (!read("CNI_CONTAINERID", &env.container_id, per_container)) {
    return fail("required env variable CNI_CONTAINERID missing");
  }
  // DEL may come without a netns (SPEC.md: the runtime may have lost it).
  if (!read("CNI_NETNS", &env.netns, env.command == Command::kAdd || env.command == Command::kCheck)) {
    return fail("required env variable CNI_NETNS missing");
  }
  if (!read("CNI_IFNAME", &env.ifname, per_container)) {
    return fail("required env variable CNI_IFNAME missing");
  }
  read("CNI_ARGS", &env.args, false);
  // CNI_PATH is required by the spec, but we never delegate to another plugin: tolerate it empty.
  read("CNI_PATH", &env.path, false);
  if (per_container) {
    if (!ValidContainerId(env.container_id)) {
      return fail("invalid CNI_CONTAINERID \"" + env.container_id +
                  "\": must match [a-zA-Z0-9][a-zA-Z0-9_.-]*");
    }
    if (!ValidIfname(env.ifname)) {
      return fail("invalid CNI_IFNAME \"" + env.ifname +
                  "\": 1-15 bytes, not . or .., no '/', ':' or whitespace");
    }
  }
  return env;
}

StatusOr<std::string> CniArg(std::string_view args, std::string_view key) {
  std::optional<std::string_view> found;
  while (!args.empty()) {
    const size_t semi = args.find(';');
    std::string_view pair = args.substr(0, semi);
    args.remove_prefix(semi == std::string_view::npos ? args.size() : semi + 1);
    const size_t eq = pair.find('=');
    if (eq == std::string_view::npos || pair.substr(0, eq) != key) continue;
    std::string_view value = pair.substr(eq + 1);
    if (found && *found != value) {
      return InvalidArgumentError("CNI_ARGS gives " + std::string(key) + " twice, \"" +
                                  std::string(*found) + "\" and \"" + std::string(value) + "\"");
    }
    found = value;
  }
  if (!found) return NotFoundError("CNI_ARGS has no " + std::string(key));
  return std::string(*found);
}

bool IsSupportedVersion(std::string_view v) {
  for (auto s : kSupportedVersions) {
    if (s == v) return true;
  }
  return false;
}

int CompareVersions(std::string_view a, std::string_view b) {
  auto part = [](std::string_view s, int i) {
    for (int k = 0; k < i; ++k) {
      auto dot = s.find('.');
      if (dot == std::string_view::npos) return 0U;
      s.remove_prefix(dot + 1);
    }
    return ParseUnsigned<uint32_t>(s.substr(0, s.find('.')), "cniVersion part").value_or(0);
  };
  for (int i = 0; i < 3; ++i) {
    uint32_t x = part(a, i), y = part(b, i);
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

std::string VersionJson(std::string_view cni_version) {
  json j;
  j["cniVersion"] = cni_version.empty() ? std::string(kLatestVersion) : std::string(cni_version);
  j["supportedVersions"] = json::array();
  for (auto v : kSupportedVersions) j["supportedVersions"].push_back(std::string(v));
  return j.dump();
}

namespace {

// "10.0.0.2/24" -> 4, "fd00::2/64" -> 6, 0 if not an address.
int IpFamilyOfCidr(const std::string& cidr) {
  std::string addr = cidr.substr(0, cidr.find('/'));
  unsigned char buf[16];
  if (inet_pton(AF_INET, addr.c_str(), buf) == 1) return 4;
  if (inet_pton(AF_INET6, addr.c_str(), buf) == 1) return 6;
  return 0;
}

}  // namespace

std::optional<json> ConvertResult(const json& result, std::string_view to, CniError* err) {
  auto fail = [&](std::string msg) -> std::optional<json> {
    *err = CniError{kErrInvalidConfig, "prevResult: " + std::move(msg), ""};
    return std::nullopt;
  };
  if (!result.is_object()) return fail("not a JSON object");
  json out = result;
  out["cniVersion"] = std::string(to);
  const bool pre1 = CompareVersions(to, "1.0.0") < 0;
  const bool pre11 = CompareVersions(to, "1.1.0") < 0;
  if (out.contains("interfaces")) {
    if (!out["interfaces"].is_array()) return fail("\"interfaces\" is not an array");
    for (auto& i : out["interfaces"]) {
      if (!i.is_object()) return fail("an interface is not an object");
      if (pre11) {
        i.erase("mtu");
        i.erase("socketPath");
        i.erase("pciID");
      }
    }
  }
  if (out.contains("ips")) {
    if (!out["ips"].is_array()) return fail("\"ips\" is not an array");
    const size_t n_if = out.contains("interfaces") ? out["interfaces"].size() : 0;
    for (auto& ip : out["ips"]) {
      if (!ip.is_object() || !ip.contains("address") || !ip["address"].is_string()) {
        return fail("an IP entry has no \"address\" string");
      }
      int fam = IpFamilyOfCidr(ip["address"].get<std::string>());
      if (fam == 0) return fail("IP address \"" + ip["address"].get<std::string>() + "\" is not an IP");
      if (ip.contains("interface")) {
        if (!ip["interface"].is_number_integer() || ip["interface"].get<long>() < 0 ||
            static_cast<size_t>(ip["interface"].get<long>()) >= n_if) {
          return fail("IP entry's \"interface\" is not an index into \"interfaces\"");
        }
      }
      if (pre1) {
        ip["version"] = fam == 4 ? "4" : "6";
      } else {
        ip.erase("version");
      }
    }
  }
  if (out.contains("routes")) {
    if (!out["routes"].is_array()) return fail("\"routes\" is not an array");
    for (auto& r : out["routes"]) {
      if (!r.is_object()) return fail("a route is not an object");
      if (pre11) {
        for (const char* k : {"mtu", "advmss", "priority", "table", "scope"}) r.erase(k);
      }
    }
  }
  return out;
}

}  // namespace rdmak8s::cni
