// IbverbsQuery: libibverbs (ibv_get_device_list, ibv_open_device, ibv_query_device).
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "rdmak8s/discovery/verbs.h"

namespace rdmak8s {
namespace {

// enum ibv_mtu (IBV_MTU_256 = 1 .. IBV_MTU_4096 = 5) in bytes; 0 for anything else.
uint32_t MtuBytes(ibv_mtu m) {
  int v = static_cast<int>(m);
  return v >= 1 && v <= 5 ? 128u << v : 0;
}

class IbverbsQuery : public VerbsQuery {
 public:
  StatusOr<VerbsAttrs> QueryDevice(std::string_view rdma_dev) override {
    const std::string name(rdma_dev);
    int num = 0;
    // Each call takes a fresh list (libibverbs rescans sysfs), so hot-plugged devices appear;
    // libibverbs serialises this internally, which makes the query safe from several threads.
    ibv_device** list = ibv_get_device_list(&num);
    if (list == nullptr) {
      int err = errno;
      // ENOSYS: no uverbs kernel support at all; the device can't be visible to libibverbs.
      if (err == ENOSYS || err == 0) {
        return NotFoundError("libibverbs: device " + name + " not listed (no RDMA kernel support)");
      }
      return ErrnoError(err, "ibv_get_device_list");
    }
    ibv_device* found = nullptr;
    for (int i = 0; i < num; ++i) {
      if (name == ibv_get_device_name(list[i])) {
        found = list[i];
        break;
      }
    }
    if (found == nullptr) {
      ibv_free_device_list(list);
      return NotFoundError("libibverbs: device " + name + " not listed");
    }
    ibv_context* ctx = ibv_open_device(found);
    if (ctx == nullptr) {
      int err = errno;
      ibv_free_device_list(list);
      return InternalError("ibv_open_device " + name + ": " + std::strerror(err)).WithErrno(err);
    }
    ibv_device_attr attr;
    std::memset(&attr, 0, sizeof(attr));
    int rc = ibv_query_device(ctx, &attr);
    std::vector<VerbsPortAttrs> ports;
    for (uint32_t p = 1; rc == 0 && p <= attr.phys_port_cnt; ++p) {
      ibv_port_attr pa;
      std::memset(&pa, 0, sizeof(pa));
      // A port that does not answer is left out: the device's own attributes still stand.
      if (ibv_query_port(ctx, static_cast<uint8_t>(p), &pa) != 0) continue;
      ports.push_back({p, MtuBytes(pa.active_mtu), MtuBytes(pa.max_mtu)});
    }
    ibv_close_device(ctx);
    ibv_free_device_list(list);
    if (rc != 0) {
      return InternalError("ibv_query_device " + name + ": " + std::strerror(rc)).WithErrno(rc);
    }
    VerbsAttrs out;
    out.fw_ver = attr.fw_ver;
    out.max_qp = static_cast<uint32_t>(attr.max_qp);
    out.max_cq = static_cast<uint32_t>(attr.max_cq);
    out.max_mr = static_cast<uint32_t>(attr.max_mr);
    out.max_pd = static_cast<uint32_t>(attr.max_pd);
    out.phys_port_cnt = attr.phys_port_cnt;
    out.ports = std::move(ports);
    return out;
  }
};

}  // namespace

std::unique_ptr<VerbsQuery> NewIbverbsQuery() { return std::make_unique<IbverbsQuery>(); }

}  // namespace rdmak8s
