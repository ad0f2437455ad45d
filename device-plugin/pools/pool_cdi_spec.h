// The CDI spec of one pool: one CDI device per RDMA device ("<prefix>/<pool>=<rdma_dev>"), the
// document and its writer being the node core's (node/cdi_spec.h). The daemon keeps one file
// per pool in --cdi-dir in sync with discovery.
#pragma once

#include <string>

#include "device-plugin/pools/pool_state.h"

namespace rdmak8s::dp {

// The CDI spec document for `state`: one CdiDevice per RDMA device, named after it.
std::string BuildCdiSpec(const PoolState& state);
// "<cdi_dir>/rdmak8s-<prefix>-<pool>.json" with '/' in the prefix made '_'.
std::string CdiSpecPath(const std::string& cdi_dir, const std::string& resource);
}  // namespace rdmak8s::dp
