#include "cni/plugin_options.h"

namespace rdmak8s::cni {

namespace {

template <typename T>
StatusOr<std::unique_ptr<T>> OpenIn(const std::function<StatusOr<std::unique_ptr<T>>()>& open,
                                    const Netns* ns, const char* missing) {
  if (!open) return UnimplementedError(missing);
  if (ns == nullptr) return open();
  std::unique_ptr<T> handle;
  RDMAK8S_RETURN_IF_ERROR(RunInNetns(*ns, [&]() -> Status {
    RDMAK8S_ASSIGN_OR_RETURN(handle, open());
    return Status::Ok();
  }));
  return handle;
}

}  // namespace

StatusOr<std::unique_ptr<RdmaNetlink>> OpenRdmaNetlink(const PluginOptions& o, const Netns* ns) {
  return OpenIn(o.new_rdma_netlink, ns, "no RDMA netlink in this build");
}

StatusOr<std::unique_ptr<RouteNetlink>> OpenRouteNetlink(const PluginOptions& o, const Netns* ns) {
  return OpenIn(o.new_route_netlink, ns, "no rtnetlink in this build");
}

StatusOr<std::unique_ptr<DcbNetlink>> OpenDcbNetlink(const PluginOptions& o) {
  if (!o.new_dcb_netlink) return UnimplementedError("no DCB netlink in this build");
  return o.new_dcb_netlink();
}

}  // namespace rdmak8s::cni
