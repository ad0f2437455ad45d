// IbverbsEventSource over the in-memory verbs seam: which contexts it opens and keeps, how it
// decodes and dispatches events, and what it closes.
#include "node/ibverbs_event_source.h"

#include <poll.h>

#include <algorithm>

#include <gtest/gtest.h>

#include "unit/node/fake_verbs_async.h"

namespace rdmak8s::node {

void PrintTo(const DeviceEvent& e, std::ostream* os) {
  *os << "{" << e.rdma_dev << " port " << e.port_num << " " << e.what << "}";
}

namespace {

class IbverbsEventSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto devices = std::make_unique<FakeVerbsAsyncDevices>();
    verbs_ = devices.get();
    for (const char* d : {"mlx5_0", "mlx5_1", "rxe0"}) verbs_->Add(d);
    auto source = NewIbverbsEventSource(std::move(devices));
    ASSERT_TRUE(source.ok()) << source.status().ToString();
    source_ = std::move(source).value();
  }

  // The source's fd is readable (as the daemon's epoll would see it): no waiting needed, the
  // fake's eventfds are written before this is asked.
  bool Readable() {
    pollfd p{source_->fd(), POLLIN, 0};
    return poll(&p, 1, 0) == 1;
  }

  std::vector<DeviceEvent> Read() {
    std::vector<DeviceEvent> out;
    Status s = source_->ReadEvents([&](const DeviceEvent& e) { out.push_back(e); });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  FakeVerbsAsyncDevices* verbs_ = nullptr;
  std::unique_ptr<DeviceEventSource> source_;
};

TEST_F(IbverbsEventSourceTest, WatchOpensTheWantedDevicesLibibverbsLists) {
  ASSERT_TRUE(source_->Watch({"mlx5_0", "rxe0", "mlx5_9"}).ok()) << "mlx5_9 is not listed: skipped";
  EXPECT_EQ(verbs_->at("mlx5_0").opens, 1);
  EXPECT_EQ(verbs_->at("mlx5_1").opens, 0);
  EXPECT_EQ(verbs_->at("rxe0").opens, 1);
}

TEST_F(IbverbsEventSourceTest, WatchAgainKeepsTheContextsOfDevicesStillWanted) {
  ASSERT_TRUE(source_->Watch({"mlx5_0", "mlx5_1"}).ok());
  ASSERT_TRUE(source_->Watch({"mlx5_0", "mlx5_1", "rxe0"}).ok());
  EXPECT_EQ(verbs_->at("mlx5_0").opens, 1);
  EXPECT_EQ(verbs_->at("mlx5_0").closes, 0);
  EXPECT_EQ(verbs_->at("rxe0").opens, 1);
  ASSERT_TRUE(source_->Watch({"mlx5_0"}).ok());
  EXPECT_EQ(verbs_->at("mlx5_0").closes, 0);
  EXPECT_EQ(verbs_->at("mlx5_1").closes, 1);
  EXPECT_EQ(verbs_->at("rxe0").closes, 1);
  // An event queued on a kept context before the second Watch is not lost.
  ASSERT_TRUE(verbs_->Push("mlx5_0", IBV_EVENT_PORT_ERR, 1));
  ASSERT_TRUE(source_->Watch({"mlx5_0"}).ok());
  EXPECT_EQ(Read(), (std::vector<DeviceEvent>{{"mlx5_0", 1, "port error"}}));
}

TEST_F(IbverbsEventSourceTest, PortEventsCarryTheirPortAndOthersPortZero) {
  ASSERT_TRUE(source_->Watch({"mlx5_0", "mlx5_1"}).ok());
  EXPECT_FALSE(Readable());
  ASSERT_TRUE(verbs_->Push("mlx5_0", IBV_EVENT_PORT_ERR, 2));
  ASSERT_TRUE(verbs_->Push("mlx5_0", IBV_EVENT_PORT_ACTIVE, 2));
  ASSERT_TRUE(verbs_->Push("mlx5_1", IBV_EVENT_GID_CHANGE, 1));
  ASSERT_TRUE(verbs_->Push("mlx5_1", IBV_EVENT_QP_FATAL));
  EXPECT_TRUE(Readable());
  std::vector<DeviceEvent> got = Read();
  std::sort(got.begin(), got.end(), [](const DeviceEvent& a, const DeviceEvent& b) {
    return a.rdma_dev < b.rdma_dev;  // stable: per device, in queue order
  });
  EXPECT_EQ(got, (std::vector<DeviceEvent>{{"mlx5_0", 2, "port error"},
                                           {"mlx5_0", 2, "port active"},
                                           {"mlx5_1", 1, "GID table change"},
                                           {"mlx5_1", 0, "local work queue catastrophic error"}}));
  EXPECT_FALSE(Readable()) << "everything queued was delivered";
  EXPECT_TRUE(Read().empty());
}

TEST_F(IbverbsEventSourceTest, DeviceFatalIsDeliveredThenItsContextClosedAndReopenedByTheNextWatch) {
  ASSERT_TRUE(source_->Watch({"mlx5_0", "mlx5_1"}).ok());
  ASSERT_TRUE(verbs_->Push("mlx5_0", IBV_EVENT_DEVICE_FATAL));
  EXPECT_EQ(Read(), (std::vector<DeviceEvent>{{"mlx5_0", 0, "device fatal"}}));
  EXPECT_EQ(verbs_->at("mlx5_0").closes, 1) << "a disassociated context hears nothing more";
  EXPECT_EQ(verbs_->at("mlx5_1").closes, 0);
  // The device came back (home from a pod, reset done): the same wanted set reopens it.
  ASSERT_TRUE(source_->Watch({"mlx5_0", "mlx5_1"}).ok());
  EXPECT_EQ(verbs_->at("mlx5_0").opens, 2);
  EXPECT_EQ(verbs_->at("mlx5_1").opens, 1);
  ASSERT_TRUE(verbs_->Push("mlx5_0", IBV_EVENT_PORT_ACTIVE, 1));
  EXPECT_EQ(Read(), (std::vector<DeviceEvent>{{"mlx5_0", 1, "port active"}}));
}

TEST_F(IbverbsEventSourceTest, DeviceThatCannotBeOpenedIsSkippedAndTriedAgain) {
  verbs_->at("mlx5_1").fail_open = true;
  ASSERT_TRUE(source_->Watch({"mlx5_0", "mlx5_1"}).ok());
  EXPECT_EQ(verbs_->at("mlx5_0").opens, 1);
  EXPECT_EQ(verbs_->at("mlx5_1").opens, 0);
  verbs_->at("mlx5_1").fail_open = false;
  ASSERT_TRUE(source_->Watch({"mlx5_0", "mlx5_1"}).ok());
  EXPECT_EQ(verbs_->at("mlx5_1").opens, 1);
  EXPECT_EQ(verbs_->at("mlx5_0").opens, 1);
}

TEST_F(IbverbsEventSourceTest, UnreadableContextIsClosedAndTheOthersStillHeard) {
  ASSERT_TRUE(source_->Watch({"mlx5_0", "mlx5_1"}).ok());
  ASSERT_TRUE(verbs_->Push("mlx5_0", IBV_EVENT_PORT_ERR, 1));
  ASSERT_TRUE(verbs_->Push("mlx5_1", IBV_EVENT_PORT_ERR, 1));
  verbs_->at("mlx5_0").fail_next = true;
  EXPECT_EQ(Read(), (std::vector<DeviceEvent>{{"mlx5_1", 1, "port error"}}));
  EXPECT_EQ(verbs_->at("mlx5_0").closes, 1);
  EXPECT_FALSE(Readable());
}

TEST(DecodeAsyncEventTest, OnlyPortEventsReadTheElementAsAPort) {
  ibv_async_event ev{};
  ev.event_type = IBV_EVENT_CLIENT_REREGISTER;
  ev.element.port_num = 3;
  EXPECT_EQ(DecodeAsyncEvent("mlx5_0", ev).port_num, 3u);
  ev.event_type = IBV_EVENT_DEVICE_FATAL;
  EXPECT_EQ(DecodeAsyncEvent("mlx5_0", ev).port_num, 0u);
  EXPECT_EQ(DecodeAsyncEvent("mlx5_0", ev).what, "device fatal");
  ev.event_type = IBV_EVENT_PORT_ERR;
  DeviceEvent d = DecodeAsyncEvent("mlx5_0", ev);
  EXPECT_EQ(d.rdma_dev, "mlx5_0");
  EXPECT_EQ(d.what, "port error");
}

}  // namespace
}  // namespace rdmak8s::node
