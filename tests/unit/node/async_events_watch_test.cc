#include "node/async_events_watch.h"

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "rdmak8s/discovery/discovery.h"
#include "support/temp_dir.h"
#include "support/test_dirs.h"
#include "unit/device-plugin/fake_event_sources.h"

namespace rdmak8s::node {
namespace {

namespace fs = std::filesystem;

// A failing Watch, then a working one.
class FlakyEventSource : public dp::FakeDeviceEventSource {
 public:
  Status Watch(const std::vector<std::string>& rdma_devs) override {
    if (fail_next) {
      fail_next = false;
      return UnavailableError("ibv_open_device mlx5_0: No such device");
    }
    return FakeDeviceEventSource::Watch(rdma_devs);
  }
  bool fail_next = false;
};

class AsyncEventsWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sys_ = tmp_.path() + "/sys";
    fs::copy(std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/mlx5_ib_2port", sys_,
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    discovery_ = std::make_unique<SysfsDiscovery>(DiscoveryOptions{sys_, nullptr});
    tracker_ = std::make_unique<DeviceTracker>(discovery_.get(), sys_);
    ASSERT_TRUE(tracker_->Rescan().ok());
  }
  testing::TempDir tmp_;
  std::string sys_;
  std::unique_ptr<Discovery> discovery_;
  std::unique_ptr<DeviceTracker> tracker_;
};

TEST_F(AsyncEventsWatchTest, WatchesOnlyWhenThePresentDevicesDiffer) {
  dp::FakeDeviceEventSource source;
  AsyncEventsWatch watch(&source);
  ASSERT_TRUE(watch.Update(*tracker_).ok());
  ASSERT_TRUE(watch.Update(*tracker_).ok());
  EXPECT_EQ(source.watch_calls(), 1);
  EXPECT_EQ(source.watched(), std::vector<std::string>{"mlx5_0"});
}

TEST_F(AsyncEventsWatchTest, ForgetAfterAFatalEventWatchesTheSameDevicesAgain) {
  dp::FakeDeviceEventSource source;
  AsyncEventsWatch watch(&source);
  ASSERT_TRUE(watch.Update(*tracker_).ok());
  watch.Forget();
  ASSERT_TRUE(watch.Update(*tracker_).ok());
  EXPECT_EQ(source.watch_calls(), 2);
}

TEST_F(AsyncEventsWatchTest, AFailedWatchIsReturnedAndRetriedByTheNextUpdate) {
  FlakyEventSource source;
  source.fail_next = true;
  AsyncEventsWatch watch(&source);
  Status s = watch.Update(*tracker_);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("mlx5_0"), std::string::npos) << s.message();
  ASSERT_TRUE(watch.Update(*tracker_).ok());
  EXPECT_EQ(source.watch_calls(), 1);
  EXPECT_EQ(source.watched(), std::vector<std::string>{"mlx5_0"});
}

TEST_F(AsyncEventsWatchTest, NoSourceIsNothingToDo) {
  AsyncEventsWatch watch(nullptr);
  EXPECT_TRUE(watch.Update(*tracker_).ok());
}

}  // namespace
}  // namespace rdmak8s::node
