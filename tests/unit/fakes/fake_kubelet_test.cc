// The fake kubelet's calls carry kubelet's deadlines, no kinder and no harsher: GetInfo of the
// plugin watcher under 1 s and tried again when it fails; GetPreferredAllocation and Allocate
// under none (kubelet's endpoint.go passes context.Background()); PreStartContainer under 30 s.
// A stand-in plugin serves the plugin-watcher and device-plugin services on one socket and
// records the deadline each call arrived with.
#include "support/fake_kubelet.h"

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace rdmak8s::fake {
namespace {

using std::chrono::system_clock;

// The deadline a call arrived with; none when the client set none.
std::optional<system_clock::time_point> DeadlineOf(const grpc::ServerContext* ctx) {
  if (ctx->deadline() >= system_clock::time_point::max() - std::chrono::hours(24 * 365)) return std::nullopt;
  return ctx->deadline();
}

class StandInPlugin final : public pluginregistration::Registration::Service, public v1beta1::DevicePlugin::Service {
 public:
  explicit StandInPlugin(std::string socket) {
    grpc::ServerBuilder b;
    b.AddListeningPort("unix://" + socket, grpc::InsecureServerCredentials());
    b.RegisterService(static_cast<pluginregistration::Registration::Service*>(this));
    b.RegisterService(static_cast<v1beta1::DevicePlugin::Service*>(this));
    server_ = b.BuildAndStart();
  }
  ~StandInPlugin() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (server_) server_->Shutdown();
  }
  bool serving() const { return server_ != nullptr; }

  grpc::Status GetInfo(grpc::ServerContext* ctx, const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo* info) override {
    std::lock_guard<std::mutex> lock(mu_);
    get_info_deadlines_.push_back(DeadlineOf(ctx));
    if (get_info_failures_ > 0) {
      --get_info_failures_;
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "not ready yet");
    }
    info->set_type("DevicePlugin");
    info->set_name("rdma/standin");
    info->add_supported_versions("v1beta1");
    return grpc::Status::OK;
  }
  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*, const pluginregistration::RegistrationStatus*,
                                        pluginregistration::RegistrationStatusResponse*) override {
    return grpc::Status::OK;
  }
  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions* o) override {
    o->set_get_preferred_allocation_available(true);
    o->set_pre_start_required(true);
    return grpc::Status::OK;
  }
  grpc::Status ListAndWatch(grpc::ServerContext*, const v1beta1::Empty*,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override {
    v1beta1::ListAndWatchResponse r;
    auto* d = r.add_devices();
    d->set_id("dev-0");
    d->set_health("Healthy");
    writer->Write(r);
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return stopping_; });  // the stream stays open, as a plugin's does
    return grpc::Status::OK;
  }
  grpc::Status GetPreferredAllocation(grpc::ServerContext* ctx, const v1beta1::PreferredAllocationRequest*,
                                      v1beta1::PreferredAllocationResponse* resp) override {
    Record("GetPreferredAllocation", ctx);
    resp->add_container_responses()->add_deviceids("dev-0");
    return grpc::Status::OK;
  }
  grpc::Status Allocate(grpc::ServerContext* ctx, const v1beta1::AllocateRequest*,
                        v1beta1::AllocateResponse* resp) override {
    Record("Allocate", ctx);
    resp->add_container_responses();
    return grpc::Status::OK;
  }
  grpc::Status PreStartContainer(grpc::ServerContext* ctx, const v1beta1::PreStartContainerRequest*,
                                 v1beta1::PreStartContainerResponse*) override {
    Record("PreStartContainer", ctx);
    return grpc::Status::OK;
  }

  void FailGetInfo(int times) {
    std::lock_guard<std::mutex> lock(mu_);
    get_info_failures_ = times;
  }
  std::vector<std::optional<system_clock::time_point>> get_info_deadlines() {
    std::lock_guard<std::mutex> lock(mu_);
    return get_info_deadlines_;
  }
  // The deadline `call` last arrived with (nullopt inside: none); nullopt outside: never called.
  std::optional<std::optional<system_clock::time_point>> deadline_of(const std::string& call) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = deadlines_.find(call);
    if (it == deadlines_.end()) return std::nullopt;
    return it->second;
  }

 private:
  void Record(const std::string& call, const grpc::ServerContext* ctx) {
    std::lock_guard<std::mutex> lock(mu_);
    deadlines_[call] = DeadlineOf(ctx);
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  int get_info_failures_ = 0;
  std::vector<std::optional<system_clock::time_point>> get_info_deadlines_;
  std::map<std::string, std::optional<system_clock::time_point>> deadlines_;
  std::unique_ptr<grpc::Server> server_;
};

class FakeKubeletDeadlinesTest : public ::testing::Test {
 protected:
  testing::TempDir dir_;
  std::string socket_ = dir_.path() + "/standin.sock";
  StandInPlugin plugin_{socket_};
  FakeKubelet kubelet_{dir_.path()};  // destroyed first: its streams end before the plugin stops
};

TEST_F(FakeKubeletDeadlinesTest, GetInfoHasKubeletsOneSecondAndIsTriedAgainWhenItFails) {
  ASSERT_TRUE(plugin_.serving());
  plugin_.FailGetInfo(2);
  const auto before = system_clock::now();
  auto info = kubelet_.RegisterViaPluginWatcher(socket_);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->name(), "rdma/standin");
  const auto deadlines = plugin_.get_info_deadlines();
  ASSERT_EQ(deadlines.size(), 3u);  // two refusals, then the answer
  for (const auto& d : deadlines) {
    ASSERT_TRUE(d.has_value());
    EXPECT_GT(*d, before);
    // gRPC sends a deadline as a timeout it rounds up: a tolerance that still tells 1 s from 5.
    EXPECT_LE(*d - before, std::chrono::milliseconds(1500) + (system_clock::now() - before));
  }
}

TEST_F(FakeKubeletDeadlinesTest, AllocationCallsHaveNoDeadlineAndPreStartHasThirtySeconds) {
  ASSERT_TRUE(plugin_.serving());
  ASSERT_TRUE(kubelet_.RegisterViaPluginWatcher(socket_).ok());
  ASSERT_TRUE(kubelet_.GetPreferredAllocation("rdma/standin", {"dev-0"}, {}, 1).ok());
  ASSERT_TRUE(kubelet_.Allocate("rdma/standin", {{"dev-0"}}).ok());
  const auto before = system_clock::now();
  ASSERT_TRUE(kubelet_.PreStartContainer("rdma/standin", {"dev-0"}).ok());

  const auto preferred = plugin_.deadline_of("GetPreferredAllocation");
  ASSERT_TRUE(preferred.has_value());
  EXPECT_FALSE(preferred->has_value()) << "GetPreferredAllocation came with a deadline";
  const auto allocate = plugin_.deadline_of("Allocate");
  ASSERT_TRUE(allocate.has_value());
  EXPECT_FALSE(allocate->has_value()) << "Allocate came with a deadline";
  const auto pre_start = plugin_.deadline_of("PreStartContainer");
  ASSERT_TRUE(pre_start.has_value());
  ASSERT_TRUE(pre_start->has_value());
  EXPECT_GE(**pre_start - before, std::chrono::seconds(29));
  EXPECT_LE(**pre_start - before, std::chrono::seconds(31) + (system_clock::now() - before));  // rounded up
}

}  // namespace
}  // namespace rdmak8s::fake
