// PoolServer's ListAndWatch streams over real unix-socket gRPC: kubelet keeps one per plugin, so
// a new stream ends the ones before it at once (found by tests/reliability/dp_soak_test.cc: in
// plugin-watcher mode each restarted kubelet's old stream lingered, with its connection).
#include <memory>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "device-plugin/kubelet/plugin_server.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "support/temp_dir.h"
#include "unit/device-plugin/test_devices.h"

namespace rdmak8s::dp {
namespace {

using namespace testdev;
using namespace std::chrono_literals;

TEST(PluginServerStreamsTest, ANewListAndWatchStreamEndsTheEarlierOneAtOnce) {
  const rdmak8s::testing::TempDir tmp;  // removed with what the test wrote, even on a failure
  const std::string& dir = tmp.path();
  ASSERT_FALSE(dir.empty());
  auto state = std::make_shared<PoolState>();
  state->resource = "rdma/p";
  state->pool.name = "p";
  state->pool.mode = PoolMode::kShared;
  state->pool.capacity = 1;
  state->devices["mlx5_0"] = {Ib("mlx5_0", 0, "0000:3b:00.0", 0), {true, ""}};
  FillIds(*state);
  {
    PoolServer server({dir + "/p.sock", false, {}}, state);
    ASSERT_TRUE(server.Start().ok());
    auto channel = grpc::CreateChannel("unix://" + dir + "/p.sock", grpc::InsecureChannelCredentials());
    auto stub = v1beta1::DevicePlugin::NewStub(channel);
    v1beta1::Empty empty;
    v1beta1::ListAndWatchResponse resp;
    grpc::ClientContext first_ctx;
    // Long enough that the 5 s cancellation poll cannot be what ends the first stream.
    first_ctx.set_deadline(std::chrono::system_clock::now() + 20s);
    auto first = stub->ListAndWatch(&first_ctx, empty);
    ASSERT_TRUE(first->Read(&resp));
    grpc::ClientContext second_ctx;
    auto second = stub->ListAndWatch(&second_ctx, empty);
    ASSERT_TRUE(second->Read(&resp));
    EXPECT_EQ(resp.devices_size(), 1);
    EXPECT_FALSE(first->Read(&resp)) << "the earlier stream ended";
    grpc::Status s = first->Finish();
    EXPECT_TRUE(s.ok()) << "ended by the server, not by its deadline: " << s.error_message();
    EXPECT_EQ(server.open_streams(), 1);
    second_ctx.TryCancel();
    server.Stop();
  }
}

}  // namespace
}  // namespace rdmak8s::dp
