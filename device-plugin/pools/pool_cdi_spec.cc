#include "device-plugin/pools/pool_cdi_spec.h"

#include <vector>

#include "node/allocate.h"
#include "node/cdi_spec.h"

namespace rdmak8s::dp {

std::string BuildCdiSpec(const PoolState& state) {
  std::vector<node::CdiDevice> devices;
  for (const auto& [name, tracked] : state.devices) {
    devices.push_back({name, node::CharDevicesFor(tracked.dev, state.pool.allocate, state.dev_root), {}});
  }
  return node::BuildCdiSpecDocument(state.cdi_kind, devices);
}

std::string CdiSpecPath(const std::string& cdi_dir, const std::string& resource) {
  std::string base = resource;
  for (char& c : base) {
    if (c == '/') c = '-';
  }
  return cdi_dir + "/rdmak8s-" + base + ".json";
}

}  // namespace rdmak8s::dp
