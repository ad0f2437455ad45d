#include "rdmak8s/device/device.h"

#include <gtest/gtest.h>

namespace rdmak8s {
namespace {

TEST(DeviceTest, NamesUseTheKernelAndIssueVocabulary) {
  EXPECT_EQ(TransportName(Transport::kIb), "ib");
  EXPECT_EQ(TransportName(Transport::kRoce), "roce");
  EXPECT_EQ(TransportName(Transport::kIwarp), "iwarp");
  EXPECT_EQ(TransportName(Transport::kUnknown), "unknown");
  EXPECT_EQ(NodeTypeName(NodeType::kCa), "CA");
  EXPECT_EQ(NodeTypeName(NodeType::kRnic), "RNIC");
  EXPECT_EQ(NodeTypeName(NodeType::kUnspecified), "unspecified");
  EXPECT_EQ(NodeTypeName(NodeType::kUsnicUdp), "usNIC UDP");
  EXPECT_EQ(ParentKindName(ParentKind::kAuxiliary), "auxiliary");
  EXPECT_EQ(ParentKindName(ParentKind::kVirtual), "virtual");
  EXPECT_EQ(PortStateName(PortState::kActive), "ACTIVE");
  EXPECT_EQ(PortStateName(PortState::kDown), "DOWN");
  EXPECT_EQ(PortStateName(PortState::kArmed), "ARMED");
  EXPECT_EQ(GidTypeName(GidType::kIb), "IB");
  EXPECT_EQ(GidTypeName(GidType::kRoceV1), "RoCE v1");
  EXPECT_EQ(GidTypeName(GidType::kRoceV2), "RoCE v2");
}

TEST(DeviceTest, FindCharDeviceMatchesKindAndPort) {
  RdmaDevice d;
  d.char_devices = {{CharDeviceKind::kUverbs, "uverbs3", 231, 195, 0},
                    {CharDeviceKind::kUmad, "umad4", 231, 4, 1},
                    {CharDeviceKind::kUmad, "umad5", 231, 5, 2},
                    {CharDeviceKind::kRdmaCm, "rdma_cm", 10, 58, 0}};
  ASSERT_NE(d.FindCharDevice(CharDeviceKind::kUmad, 2), nullptr);
  EXPECT_EQ(d.FindCharDevice(CharDeviceKind::kUmad, 2)->name, "umad5");
  EXPECT_EQ(d.FindCharDevice(CharDeviceKind::kUmad, 3), nullptr);
  EXPECT_EQ(d.FindCharDevice(CharDeviceKind::kIssm, 1), nullptr);
  EXPECT_EQ(d.FindCharDevice(CharDeviceKind::kUverbs)->ContainerPath(), "/dev/infiniband/uverbs3");
}

TEST(DeviceTest, PciAccessorsAreEmptyForVirtualDevices) {
  RdmaDevice d;
  d.parent.kind = ParentKind::kVirtual;
  EXPECT_EQ(d.pci_address(), "");
  EXPECT_EQ(d.numa_node(), -1);
  d.parent.pci = PciInfo{};
  d.parent.pci->address = "0000:3b:00.0";
  d.parent.pci->numa_node = 1;
  EXPECT_EQ(d.pci_address(), "0000:3b:00.0");
  EXPECT_EQ(d.numa_node(), 1);
  EXPECT_EQ(d.FindPort(1), nullptr);
}

}  // namespace
}  // namespace rdmak8s
