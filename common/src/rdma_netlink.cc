#include "rdmak8s/rdma_netlink.h"

namespace rdmak8s {

std::string_view RdmaNetnsModeName(RdmaNetnsMode m) {
  return m == RdmaNetnsMode::kShared ? "shared" : "exclusive";
}

}  // namespace rdmak8s
