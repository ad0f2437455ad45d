#include "device-plugin/config/config.h"

#include <cctype>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "rdmak8s/base/file_util.h"
#include "rdmak8s/base/json_reader.h"
#include "rdmak8s/base/strings.h"

namespace rdmak8s::dp {

namespace {

using nlohmann::json;
using json_reader::CheckKeys;
using json_reader::Invalid;
using json_reader::Missing;

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

StatusOr<PoolConfig> ParsePool(const json& j, const std::string& path) {
  RDMAK8S_RETURN_IF_ERROR(CheckKeys(j, path, {"name", "mode", "capacity", "selectors", "allocate"}));
  PoolConfig p;
  RDMAK8S_ASSIGN_OR_RETURN(p.name, json_reader::StringAt(j, path, "name", /*required=*/true));
  if (!IsResourceNamePart(p.name)) {
    return Invalid(path + ".name", "\"" + p.name +
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
      return Invalid(path + ".mode", m.dump() + " is not one of shared, exclusive");
    }
  }
  if (j.contains("capacity")) {
    const json& c = j["capacity"];
    if (p.mode == PoolMode::kExclusive) {
      return Invalid(path + ".capacity", "only applies to shared pools (exclusive is one ID per device)");
    }
    if (c == "auto") {
      p.capacity = kAutoCapacity;
    } else if (c.is_number_integer() && c.get<int64_t>() >= 1 && c.get<int64_t>() <= kMaxCapacity) {
      p.capacity = c.get<int>();
    } else {
      return Invalid(path + ".capacity", "must be \"auto\" or an integer 1.." +
                                         std::to_string(kMaxCapacity) + ", got " + c.dump());
    }
  }
  if (!j.contains("selectors") || j["selectors"].is_null()) {
    return Invalid(path + ".selectors", "missing (use {} only if the pool should take every device)");
  }
  RDMAK8S_ASSIGN_OR_RETURN(p.selectors, node::ParseSelectors(j["selectors"], path + ".selectors"));
  if (j.contains("allocate")) {
    RDMAK8S_ASSIGN_OR_RETURN(p.allocate, node::ParseAllocate(j["allocate"], path + ".allocate"));
  }
  return p;
}

}  // namespace

StatusOr<PluginConfig> ParseConfig(std::string_view json_text) {
  // The reader's error names the syntax error's position, or the nesting bound.
  RDMAK8S_ASSIGN_OR_RETURN(const json j, json_reader::Parse(json_text, "$"));
  RDMAK8S_RETURN_IF_ERROR(CheckKeys(j, "$", {"resourcePrefix", "pools"}));
  PluginConfig cfg;
  if (j.contains("resourcePrefix")) {
    if (!j["resourcePrefix"].is_string() || !IsDnsSubdomain(j["resourcePrefix"].get<std::string>())) {
      return Invalid("$.resourcePrefix", j["resourcePrefix"].dump() +
                                         " is not a DNS subdomain (lower-case, like rdma or "
                                         "rdma.example.com)");
    }
    cfg.resource_prefix = j["resourcePrefix"].get<std::string>();
  }
  RDMAK8S_ASSIGN_OR_RETURN(const json* pools_at, json_reader::ArrayAt(j, "$", "pools"));
  if (pools_at == nullptr) return Missing("$.pools");
  const json& pools = *pools_at;
  if (pools.empty()) return Invalid("$.pools", "must name at least one pool");
  std::set<std::string> names;
  for (size_t i = 0; i < pools.size(); ++i) {
    std::string path = json_reader::Index("$.pools", i);
    RDMAK8S_ASSIGN_OR_RETURN(PoolConfig p, ParsePool(pools[i], path));
    if (!names.insert(p.name).second) {
      return Invalid(path + ".name", "duplicate pool name \"" + p.name + "\"");
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
