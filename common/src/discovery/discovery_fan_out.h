// Discovery's fan-out: reads the devices of one call on a few threads when there are many.
// Internal to rdmak8s_common.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "discovery/discovery_context.h"

namespace rdmak8s::internal::discovery {

// ReadDevice(ctx, names[i]) for every i, into out[i] (always set on return). Threads are
// short-lived and at most 8; when none can be started the calling thread reads them all.
std::vector<std::optional<StatusOr<RdmaDevice>>> ReadDevices(Context& ctx,
                                                            const std::vector<std::string>& names);

}  // namespace rdmak8s::internal::discovery
