// Discovery's char-device index: class/infiniband_verbs, class/infiniband_mad and
// class/misc/rdma_cm, read once per call into the Context (which RDMA device owns which uverbs,
// umad and issm node, and the bus parent each hangs off). Internal to rdmak8s_common.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "device/sysfs.h"
#include "discovery/discovery_context.h"

namespace rdmak8s::internal::discovery {

// <dir>/<prefix>dev as "<major>:<minor>". `prefix` ("uverbs0/" or ""): the char device's
// directory relative to `dir`.
StatusOr<std::pair<uint32_t, uint32_t>> ParseDevNumbers(const SysfsDir& dir,
                                                        const std::string& prefix = "");

// Scans one char-device class ("infiniband_verbs", "infiniband_mad") into ctx.chars and
// ctx.uverbs_ibdevs_by_parent. A missing class (module not loaded) is empty; an unreadable one
// is an error of the whole call; an unreadable entry is a failure with its path.
// With ctx.only_under set (DiscoverOne), only the names the kernel placed under that parent are
// considered.
Status IndexCharClass(Context& ctx, const std::string& klass_name);

// class/misc/rdma_cm/dev into ctx.rdma_cm; absent: none; unreadable: a failure in ctx.failures.
void IndexRdmaCm(Context& ctx);

}  // namespace rdmak8s::internal::discovery
