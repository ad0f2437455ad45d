#include "rdmak8s/device/port_state.h"

#include "device/sysfs.h"

namespace rdmak8s {

using internal::NumberedName;
using internal::ParseNumberedName;
using internal::SysfsDir;

namespace internal {

StatusOr<PortLinkState> ReadPortLinkStateIn(const SysfsDir& dir) {
  PortLinkState out;
  RDMAK8S_ASSIGN_OR_RETURN(std::string state, dir.Read("state"));
  RDMAK8S_ASSIGN_OR_RETURN(NumberedName st, ParseNumberedName(state, dir.PathOf("state")));
  out.state = st.number <= 5 ? static_cast<PortState>(st.number) : PortState::kNop;
  RDMAK8S_ASSIGN_OR_RETURN(std::string phys, dir.Read("phys_state"));
  RDMAK8S_ASSIGN_OR_RETURN(NumberedName ph, ParseNumberedName(phys, dir.PathOf("phys_state")));
  out.phys_state = ph.number;
  out.phys_state_name = ph.name;
  return out;
}

}  // namespace internal

StatusOr<PortLinkState> ReadPortLinkState(const std::string& sysfs_root, std::string_view rdma_dev,
                                          uint32_t port_num) {
  RDMAK8S_ASSIGN_OR_RETURN(
      SysfsDir dir, SysfsDir::Open(sysfs_root + "/class/infiniband/" + std::string(rdma_dev) +
                                   "/ports/" + std::to_string(port_num)));
  return internal::ReadPortLinkStateIn(dir);
}

}  // namespace rdmak8s
