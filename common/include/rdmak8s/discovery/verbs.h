// VerbsQuery: the libibverbs seam. Discovery uses it to enrich devices where libibverbs sees
// them; tests use a fake. The real implementation (IbverbsQuery, target rdmak8s_verbs) links
// libibverbs, which the CNI binary must not: keep this out of anything the CNI links.
//
// Thread safety: IbverbsQuery is safe to call from several threads.
#pragma once

#include <memory>
#include <string_view>

#include "rdmak8s/base/status.h"
#include "rdmak8s/device/device.h"

namespace rdmak8s {

class VerbsQuery {
 public:
  virtual ~VerbsQuery() = default;
  // ibv_open_device + ibv_query_device for `rdma_dev`. kNotFound when libibverbs does not list
  // it (no provider, no uverbs node); kInternal with the cause when the query fails.
  virtual StatusOr<VerbsAttrs> QueryDevice(std::string_view rdma_dev) = 0;
};

// The real libibverbs implementation.
std::unique_ptr<VerbsQuery> NewIbverbsQuery();

}  // namespace rdmak8s
