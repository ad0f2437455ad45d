// The one port-usable rule (port_usable.h), as a table: every input that decides it.
#include "rdmak8s/device/port_usable.h"

#include <gtest/gtest.h>

#include <vector>

namespace rdmak8s {
namespace {

Port MakePort(PortState state, uint32_t phys, std::string phys_name) {
  Port p;
  p.port_num = 1;
  p.state = state;
  p.phys_state = phys;
  p.phys_state_name = std::move(phys_name);
  return p;
}

struct Row {
  Transport transport;
  PortState state;
  uint32_t phys_state;
  std::string phys_state_name;
  std::optional<bool> netdev_up;
  std::string want;  // "" = usable
};

TEST(PortUsableTest, TheRuleTakesStatePhysStateAndForEthernetTheNetdev) {
  const std::vector<Row> rows = {
      {Transport::kIb, PortState::kActive, 5, "LinkUp", std::nullopt, ""},
      {Transport::kIb, PortState::kInit, 5, "LinkUp", std::nullopt, "state INIT"},
      {Transport::kIb, PortState::kArmed, 5, "LinkUp", std::nullopt, "state ARMED"},
      {Transport::kIb, PortState::kDown, 2, "Polling", std::nullopt, "state DOWN"},
      {Transport::kIb, PortState::kActive, 6, "LinkErrorRecovery", std::nullopt,
       "phys_state LinkErrorRecovery"},
      // IB ports take no netdev input: an IPoIB netdev down does not stop verbs.
      {Transport::kIb, PortState::kActive, 5, "LinkUp", false, ""},
      {Transport::kRoce, PortState::kActive, 5, "LinkUp", true, ""},
      {Transport::kRoce, PortState::kActive, 5, "LinkUp", std::nullopt, ""},  // unknown: up
      {Transport::kRoce, PortState::kActive, 5, "LinkUp", false, "netdev ens1f0 down"},
      {Transport::kRoce, PortState::kActive, 3, "Disabled", true, "phys_state Disabled"},
      {Transport::kRoce, PortState::kActive, 3, "", true, "phys_state 3"},  // no name: the number
      {Transport::kRoce, PortState::kDown, 3, "Disabled", false, "state DOWN"},  // first reason
      {Transport::kIwarp, PortState::kActive, 5, "LinkUp", false, "netdev ens1f0 down"},
      {Transport::kIwarp, PortState::kDown, 3, "Disabled", std::nullopt, "state DOWN"},
      {Transport::kUnknown, PortState::kActive, 5, "LinkUp", false, ""},
      {Transport::kUnknown, PortState::kActive, 2, "Polling", std::nullopt, "phys_state Polling"},
  };
  for (const Row& r : rows) {
    const Port p = MakePort(r.state, r.phys_state, r.phys_state_name);
    EXPECT_EQ(PortUnusableReason(r.transport, p, r.netdev_up, "ens1f0"), r.want)
        << TransportName(r.transport) << " " << PortStateName(r.state) << " phys " << r.phys_state
        << " netdev " << (r.netdev_up ? (*r.netdev_up ? "up" : "down") : "unknown");
  }
}

TEST(PortUsableTest, ANetdevDownWithoutANameSaysSo) {
  EXPECT_EQ(PortUnusableReason(Transport::kRoce, MakePort(PortState::kActive, 5, "LinkUp"), false),
            "netdev down");
}

TEST(PortUsableTest, PortNetdevIsThePortsFirstElseTheDevices) {
  RdmaDevice d;
  Port p;
  EXPECT_EQ(PortNetdev(d, p), "");
  d.netdevs = {"eth0", "eth1"};
  EXPECT_EQ(PortNetdev(d, p), "eth0");
  p.netdevs = {"eth1", "vlan5"};
  EXPECT_EQ(PortNetdev(d, p), "eth1");
}

}  // namespace
}  // namespace rdmak8s
