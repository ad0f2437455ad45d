// Fuzz target: the device plugin's --config file (device-plugin/config/config.h ParseConfig) and what
// the daemon derives from a config (EnvConflicts, ValidateForCdi, resource and env names).
// Input: the file's bytes.
//
// Invariants beyond "no crash, no sanitizer report":
//   - a refusal is kInvalidArgument with a message starting at a JSON path ("$");
//   - a config that parses, written back as JSON (ToJson below, every field in the documented
//     form of docs/device-plugin.md), parses to the same PluginConfig: the parser keeps nothing
//     it cannot read back, and its normalisation (hex IDs lower case, no 0x) is a fixed point;
//   - pool names are unique and every resource name is "<prefix>/<pool>".
#include <set>

#include <nlohmann/json.hpp>

#include "device-plugin/config/config.h"
#include "fuzz/fuzz_check.h"

namespace rdmak8s::dp {
namespace {

using nlohmann::json;

json ToJson(const PluginConfig& c) {
  json pools = json::array();
  for (const PoolConfig& p : c.pools) {
    json pool = {{"name", p.name}, {"mode", std::string(PoolModeName(p.mode))}};
    if (p.mode == PoolMode::kShared) {
      pool["capacity"] = p.capacity == kAutoCapacity ? json("auto") : json(p.capacity);
    }
    const node::Selectors& s = p.selectors;
    json sel = json::object();
    auto list = [&](const char* key, const auto& v) {
      if (!v.empty()) sel[key] = v;
    };
    list("vendors", s.vendors);
    list("deviceIDs", s.device_ids);
    list("drivers", s.drivers);
    list("pciAddresses", s.pci_addresses);
    list("rdmaDevices", s.rdma_devices);
    list("netdevs", s.netdevs);
    list("linkTypes", s.link_types);
    list("transports", s.transports);
    list("numaNodes", s.numa_nodes);
    list("pfNames", s.pf_names);
    if (s.is_vf) sel["isVF"] = *s.is_vf;
    pool["selectors"] = sel;
    const node::AllocateOptions& a = p.allocate;
    pool["allocate"] = {{"ncclEnv", a.nccl_env}, {"ucxEnv", a.ucx_env}, {"issm", a.issm},
                        {"roceUmad", a.roce_umad}, {"env", a.extra_env}};
    pools.push_back(pool);
  }
  return {{"resourcePrefix", c.resource_prefix}, {"pools", pools}};
}

}  // namespace
}  // namespace rdmak8s::dp

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rdmak8s::dp;
  using rdmak8s::StatusCode;
  auto cfg = ParseConfig(rdmak8s::fuzz::AsText(data, size));
  if (!cfg.ok()) {
    FUZZ_CHECK(cfg.status().code() == StatusCode::kInvalidArgument, cfg.status().ToString());
    FUZZ_CHECK(cfg.status().message().rfind("$", 0) == 0, cfg.status().message());
    return 0;
  }
  FUZZ_CHECK(!cfg->pools.empty(), "a config without pools parsed");
  std::set<std::string> names;
  for (const PoolConfig& p : cfg->pools) {
    FUZZ_CHECK(names.insert(p.name).second, "duplicate pool " + p.name);
    FUZZ_CHECK(ResourceName(*cfg, p) == cfg->resource_prefix + "/" + p.name, p.name);
    FUZZ_CHECK(p.capacity >= 0 && p.capacity <= kMaxCapacity, std::to_string(p.capacity));
    const std::string env = PoolEnvName(p.name);
    for (char c : env) FUZZ_CHECK(std::isalnum(static_cast<unsigned char>(c)) || c == '_', env);
  }
  const std::string written = ToJson(*cfg).dump();
  auto again = ParseConfig(written);
  FUZZ_CHECK(again.ok(), written + ": " + again.status().ToString());
  FUZZ_CHECK(*again == *cfg, written);
  (void)EnvConflicts(*cfg);
  (void)ValidateForCdi(*cfg);
  return 0;
}
