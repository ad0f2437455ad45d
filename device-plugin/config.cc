#include "device-plugin/config.h"

#include <map>
#include <optional>

#include <cctype>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "rdmak8s/device_id.h"
#include "rdmak8s/file_util.h"
#include "rdmak8s/strings.h"

namespace rdmak8s::dp {

namespace {

using nlohmann::json;

Status Bad(const std::string& path, const std::string& what) {
  return InvalidArgumentError(path + ": " + what);
}

// The allowed keys of an object; anything else is a typo we refuse rather than ignore.
Status CheckKeys(const json& obj, const std::string& path, const std::set<std::string>& allowed) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (!allowed.count(it.key())) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      return Bad(path + "." + it.key(), "unknown field (allowed: " + list + ")");
    }
  }
  return Status::Ok();
}

std::string TypeName(const json& j) { return j.type_name(); }

StatusOr<std::vector<std::string>> StringList(const json& j, const std::string& path) {
  if (!j.is_array()) return Bad(path, "must be a list of strings, got " + TypeName(j));
  if (j.empty()) return Bad(path, "must not be empty (leave the selector out to match all)");
  std::vector<std::string> out;
  for (size_t i = 0; i < j.size(); ++i) {
    std::string p = path + "[" + std::to_string(i) + "]";
    if (!j[i].is_string()) return Bad(p, "must be a string, got " + TypeName(j[i]));
    std::string s = j[i].get<std::string>();
    if (s.empty()) return Bad(p, "must not be empty");
    out.push_back(std::move(s));
  }
  return out;
}

Status CheckHexIds(std::vector<std::string>& ids, const std::string& path, const char* what) {
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string s = ids[i];
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s = s.substr(2);
    bool ok = s.size() == 4;
    for (char& c : s) {
      ok = ok && std::isxdigit(static_cast<unsigned char>(c));
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (!ok) {
      return Bad(path + "[" + std::to_string(i) + "]",
                 "\"" + ids[i] + "\" is not a 4-digit hex PCI " + what);
    }
    ids[i] = s;
  }
  return Status::Ok();
}


bool IsResourceNamePart(const std::string& s) {
  // Kubernetes qualified-name part: [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, at most 63.
  if (s.empty() || s.size() > 63) return false;
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s) {
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

bool IsDnsSubdomain(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (start <= s.size()) {
    size_t dot = s.find('.', start);
    if (dot == std::string::npos) dot = s.size();
    std::string label = s.substr(start, dot - start);
    if (label.empty() || label.size() > 63) return false;
    if (!std::isalnum(static_cast<unsigned char>(label.front())) ||
        !std::isalnum(static_cast<unsigned char>(label.back()))) {
      return false;
    }
    for (char c : label) {
      if (!(std::islower(static_cast<unsigned char>(c)) ||
            std::isdigit(static_cast<unsigned char>(c)) || c == '-')) {
        return false;
      }
    }
    start = dot + 1;
  }
  return true;
}

Status CheckOneOf(const std::vector<std::string>& vals, const std::string& path,
                  const std::set<std::string>& allowed) {
  for (size_t i = 0; i < vals.size(); ++i) {
    if (!allowed.count(vals[i])) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      return Bad(path + "[" + std::to_string(i) + "]",
                 "\"" + vals[i] + "\" is not one of " + list);
    }
  }
  return Status::Ok();
}


StatusOr<AllocateOptions> ParseAllocate(const json& j, const std::string& path) {
  if (!j.is_object()) return Bad(path, "must be an object, got " + TypeName(j));
  RDMAK8S_RETURN_IF_ERROR(CheckKeys(j, path, {"ncclEnv", "ucxEnv", "issm", "roceUmad", "env"}));
  AllocateOptions a;
  auto flag = [&](const char* key, bool& out) -> Status {
    if (!j.contains(key)) return Status::Ok();
    if (!j[key].is_boolean()) {
      return Bad(path + "." + key, "must be true or false, got " + j[key].dump());
    }
    out = j[key].get<bool>();
    return Status::Ok();
  };
  RDMAK8S_RETURN_IF_ERROR(flag("ncclEnv", a.nccl_env));
  RDMAK8S_RETURN_IF_ERROR(flag("ucxEnv", a.ucx_env));
  RDMAK8S_RETURN_IF_ERROR(flag("issm", a.issm));
  RDMAK8S_RETURN_IF_ERROR(flag("roceUmad", a.roce_umad));
  if (j.contains("env")) {
    const json& e = j["env"];
    if (!e.is_object()) return Bad(path + ".env", "must be an object of strings, got " + TypeName(e));
    for (auto it = e.begin(); it != e.end(); ++it) {
      std::string p = path + ".env." + it.key();
      if (!it.value().is_string()) return Bad(p, "must be a string, got " + it.value().dump());
      const std::string& k = it.key();
      bool ok = !k.empty() && !std::isdigit(static_cast<unsigned char>(k[0]));
      for (char c : k) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
      if (!ok) return Bad(p, "is not a valid environment variable name");
      a.extra_env[k] = it.value().get<std::string>();
    }
  }
  return a;
}

StatusOr<PoolConfig> ParsePool(const json& j, const std::string& path) {
  if (!j.is_object()) return Bad(path, "must be an object, got " + TypeName(j));
  RDMAK8S_RETURN_IF_ERROR(CheckKeys(j, path, {"name", "mode", "capacity", "selectors", "allocate"}));
  PoolConfig p;
  if (!j.contains("name")) return Bad(path + ".name", "is required");
  if (!j["name"].is_string()) return Bad(path + ".name", "must be a string, got " + TypeName(j["name"]));
  p.name = j["name"].get<std::string>();
  if (!IsResourceNamePart(p.name)) {
    return Bad(path + ".name", "\"" + p.name +
                                   "\" is not a valid resource name (1-63 of [A-Za-z0-9-_.], "
                                   "starting and ending alphanumeric)");
  }
  if (j.contains("mode")) {
    const json& m = j["mode"];
    if (m == "shared") {
      p.mode = PoolMode::kShared;
    } else if (m == "exclusive") {
      p.mode = PoolMode::kExclusive;
    } else {
      return Bad(path + ".mode", m.dump() + " is not one of shared, exclusive");
    }
  }
  if (j.contains("capacity")) {
    const json& c = j["capacity"];
    if (p.mode == PoolMode::kExclusive) {
      return Bad(path + ".capacity", "only applies to shared pools (exclusive is one ID per device)");
    }
    if (c == "auto") {
      p.capacity = kAutoCapacity;
    } else if (c.is_number_integer() && c.get<int64_t>() >= 1 && c.get<int64_t>() <= kMaxCapacity) {
      p.capacity = c.get<int>();
    } else {
      return Bad(path + ".capacity", "must be \"auto\" or an integer 1.." +
                                         std::to_string(kMaxCapacity) + ", got " + c.dump());
    }
  }
  if (!j.contains("selectors")) {
    return Bad(path + ".selectors", "is required (use {} only if the pool should take every device)");
  }
  RDMAK8S_ASSIGN_OR_RETURN(p.selectors, ParseSelectors(j["selectors"], path + ".selectors"));
  if (j.contains("allocate")) {
    RDMAK8S_ASSIGN_OR_RETURN(p.allocate, ParseAllocate(j["allocate"], path + ".allocate"));
  }
  return p;
}

}  // namespace

StatusOr<Selectors> ParseSelectors(const json& j, const std::string& path) {
  if (!j.is_object()) return Bad(path, "must be an object, got " + TypeName(j));
  RDMAK8S_RETURN_IF_ERROR(CheckKeys(j, path,
                                    {"vendors", "deviceIDs", "drivers", "pciAddresses",
                                     "rdmaDevices", "netdevs", "linkTypes", "transports",
                                     "numaNodes", "isVF", "pfNames"}));
  Selectors s;
  auto list = [&](const char* key, std::vector<std::string>& out) -> Status {
    if (!j.contains(key)) return Status::Ok();
    RDMAK8S_ASSIGN_OR_RETURN(out, StringList(j[key], path + "." + key));
    return Status::Ok();
  };
  RDMAK8S_RETURN_IF_ERROR(list("vendors", s.vendors));
  RDMAK8S_RETURN_IF_ERROR(CheckHexIds(s.vendors, path + ".vendors", "vendor ID"));
  RDMAK8S_RETURN_IF_ERROR(list("deviceIDs", s.device_ids));
  RDMAK8S_RETURN_IF_ERROR(CheckHexIds(s.device_ids, path + ".deviceIDs", "device ID"));
  RDMAK8S_RETURN_IF_ERROR(list("drivers", s.drivers));
  RDMAK8S_RETURN_IF_ERROR(list("pciAddresses", s.pci_addresses));
  for (size_t i = 0; i < s.pci_addresses.size(); ++i) {
    // tolower of a negative char (a UTF-8 byte) is undefined: pass it as unsigned char.
    for (char& c : s.pci_addresses[i]) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (!IsPciAddress(s.pci_addresses[i])) {
      return Bad(path + ".pciAddresses[" + std::to_string(i) + "]",
                 "\"" + s.pci_addresses[i] + "\" is not a PCI address like 0000:3b:00.0");
    }
  }
  RDMAK8S_RETURN_IF_ERROR(list("rdmaDevices", s.rdma_devices));
  RDMAK8S_RETURN_IF_ERROR(list("netdevs", s.netdevs));
  RDMAK8S_RETURN_IF_ERROR(list("linkTypes", s.link_types));
  RDMAK8S_RETURN_IF_ERROR(CheckOneOf(s.link_types, path + ".linkTypes", {"infiniband", "ethernet"}));
  RDMAK8S_RETURN_IF_ERROR(list("transports", s.transports));
  RDMAK8S_RETURN_IF_ERROR(CheckOneOf(s.transports, path + ".transports", {"ib", "roce", "iwarp"}));
  RDMAK8S_RETURN_IF_ERROR(list("pfNames", s.pf_names));
  if (j.contains("numaNodes")) {
    const json& n = j["numaNodes"];
    std::string p = path + ".numaNodes";
    if (!n.is_array()) return Bad(p, "must be a list of integers, got " + TypeName(n));
    if (n.empty()) return Bad(p, "must not be empty (leave the selector out to match all)");
    for (size_t i = 0; i < n.size(); ++i) {
      if (!n[i].is_number_integer() || n[i].get<int64_t>() < -1 || n[i].get<int64_t>() > 1023) {
        return Bad(p + "[" + std::to_string(i) + "]",
                   "must be a NUMA node number (0..1023, or -1 for unknown), got " + n[i].dump());
      }
      s.numa_nodes.push_back(n[i].get<int>());
    }
  }
  if (j.contains("isVF")) {
    if (!j["isVF"].is_boolean()) {
      return Bad(path + ".isVF", "must be true or false, got " + j["isVF"].dump());
    }
    s.is_vf = j["isVF"].get<bool>();
  }
  return s;
}

StatusOr<AllocateOptions> ParseAllocateOptions(std::string_view json_text) {
  json j = json::parse(json_text, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/false);
  if (j.is_discarded()) return InvalidArgumentError("$: invalid JSON");
  return ParseAllocate(j, "$");
}

StatusOr<PluginConfig> ParseConfig(std::string_view json_text) {
  json j = json::parse(json_text, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/false);
  if (j.is_discarded()) {
    // Parse again with exceptions only to get the position of the syntax error.
    try {
      json ignored = json::parse(json_text);
    } catch (const json::parse_error& e) {
      return InvalidArgumentError(std::string("$: invalid JSON: ") + e.what());
    }
    return InvalidArgumentError("$: invalid JSON");
  }
  if (!j.is_object()) return Bad("$", "must be an object, got " + TypeName(j));
  RDMAK8S_RETURN_IF_ERROR(CheckKeys(j, "$", {"resourcePrefix", "pools"}));
  PluginConfig cfg;
  if (j.contains("resourcePrefix")) {
    if (!j["resourcePrefix"].is_string() || !IsDnsSubdomain(j["resourcePrefix"].get<std::string>())) {
      return Bad("$.resourcePrefix", j["resourcePrefix"].dump() +
                                         " is not a DNS subdomain (lower-case, like rdma or "
                                         "rdma.example.com)");
    }
    cfg.resource_prefix = j["resourcePrefix"].get<std::string>();
  }
  if (!j.contains("pools")) return Bad("$.pools", "is required");
  const json& pools = j["pools"];
  if (!pools.is_array()) return Bad("$.pools", "must be a list, got " + TypeName(pools));
  if (pools.empty()) return Bad("$.pools", "must name at least one pool");
  std::set<std::string> names;
  for (size_t i = 0; i < pools.size(); ++i) {
    std::string path = "$.pools[" + std::to_string(i) + "]";
    RDMAK8S_ASSIGN_OR_RETURN(PoolConfig p, ParsePool(pools[i], path));
    if (!names.insert(p.name).second) {
      return Bad(path + ".name", "duplicate pool name \"" + p.name + "\"");
    }
    cfg.pools.push_back(std::move(p));
  }
  return cfg;
}

StatusOr<PluginConfig> LoadConfigFile(const std::string& path) {
  StatusOr<std::string> text = ReadConfigFile(path);
  if (!text.ok()) return text.status().Prepend("config " + path);
  auto cfg = ParseConfig(*text);
  if (!cfg.ok()) return cfg.status().Prepend("config " + path);
  return cfg;
}

namespace {

// Empty when `name` is a valid CDI vendor or class name, else why not.
std::string CdiNameProblem(std::string_view name) {
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  auto alnum = [&](char c) { return alpha(c) || (c >= '0' && c <= '9'); };
  if (name.empty()) return "it is empty";
  if (!alpha(name.front())) return "it must start with a letter";
  if (!alnum(name.back())) return "it must end with a letter or digit";
  for (char c : name) {
    if (!alnum(c) && c != '_' && c != '-' && c != '.') {
      return std::string("it may only hold letters, digits, '_', '-' and '.', not '") + c + "'";
    }
  }
  return "";
}

}  // namespace

Status ValidateForCdi(const PluginConfig& config) {
  if (std::string why = CdiNameProblem(config.resource_prefix); !why.empty()) {
    return InvalidArgumentError("$.resourcePrefix: \"" + config.resource_prefix +
                                "\" cannot be a CDI vendor (--cdi): " + why);
  }
  for (size_t i = 0; i < config.pools.size(); ++i) {
    const std::string& name = config.pools[i].name;
    if (std::string why = CdiNameProblem(name); !why.empty()) {
      return InvalidArgumentError("$.pools[" + std::to_string(i) + "].name: \"" + name +
                                  "\" cannot be a CDI class (--cdi): " + why);
    }
  }
  return Status::Ok();
}

std::string_view PoolModeName(PoolMode m) {
  return m == PoolMode::kShared ? "shared" : "exclusive";
}

std::string ResourceName(const PluginConfig& config, const PoolConfig& pool) {
  return config.resource_prefix + "/" + pool.name;
}

std::string PoolEnvName(std::string_view pool_name) {
  std::string out = "RDMAK8S_";
  for (char c : pool_name) {
    out += std::isalnum(static_cast<unsigned char>(c))
               ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
               : '_';
  }
  return out + "_DEVICES";
}

}  // namespace rdmak8s::dp

namespace rdmak8s::dp {

std::vector<std::string> EnvConflicts(const PluginConfig& config) {
  struct Setter {
    std::string pool;
    std::string source;                // "ncclEnv", "ucxEnv", "env", "pool devices"
    std::optional<std::string> value;  // static value; none: differs per allocation
  };
  std::vector<std::string> keys;  // in order of first appearance
  std::map<std::string, std::vector<Setter>> setters;
  auto add = [&](const std::string& key, Setter s) {
    auto [it, fresh] = setters.try_emplace(key);
    if (fresh) keys.push_back(key);
    it->second.push_back(std::move(s));
  };
  std::vector<std::string> nccl_pools;
  std::vector<std::string> ucx_pools;
  for (const auto& p : config.pools) {
    if (p.allocate.nccl_env) nccl_pools.push_back(p.name);
    if (p.allocate.ucx_env) ucx_pools.push_back(p.name);
  }
  std::vector<std::string> out;
  // ncclEnv / ucxEnv of several pools: none of them writes the variable (SharedDeviceListEnv,
  // allocate.h), so there is nothing to clash; say what happens instead.
  auto left_unset = [&](const std::vector<std::string>& pools, const char* flag, const char* key,
                        const char* who) {
    if (pools.size() < 2) return;
    out.push_back("pools " + Join(pools, ", ") + " all opt into " + flag + ": none sets " + key +
                  " (kubelet keeps one value of a key two Allocate answers set, so a container "
                  "given devices of two of them would lose the other's); unset, " + who +
                  " uses every RDMA device the container has, and RDMAK8S_<POOL>_DEVICES names "
                  "each pool's");
  };
  left_unset(nccl_pools, "ncclEnv", "NCCL_IB_HCA", "NCCL");
  left_unset(ucx_pools, "ucxEnv", "UCX_NET_DEVICES", "UCX");
  for (const auto& p : config.pools) {
    if (p.allocate.nccl_env && nccl_pools.size() == 1) add("NCCL_IB_HCA", {p.name, "ncclEnv", std::nullopt});
    if (p.allocate.ucx_env && ucx_pools.size() == 1) add("UCX_NET_DEVICES", {p.name, "ucxEnv", std::nullopt});
    add(PoolEnvName(p.name), {p.name, "pool devices", std::nullopt});
    for (const auto& [k, v] : p.allocate.extra_env) add(k, {p.name, "env", v});
  }
  for (const auto& key : keys) {
    const auto& list = setters[key];
    for (size_t i = 0; i < list.size(); ++i) {
      for (size_t j = i + 1; j < list.size(); ++j) {
        const Setter& a = list[i];
        const Setter& b = list[j];
        if (a.value && b.value && *a.value == *b.value) continue;
        std::string sources = a.source == b.source ? a.source : a.source + ", " + b.source;
        out.push_back("pools " + a.pool + " and " + b.pool + " both set " + key + " (" + sources +
                      "): a container given devices of both gets only one of the values (kubelet "
                      "keeps one and logs \"Environment variable has conflicting setting\")");
      }
    }
  }
  return out;
}

}  // namespace rdmak8s::dp
