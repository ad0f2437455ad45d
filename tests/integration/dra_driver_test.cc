// The real rdmak8s-dra-driver binary as a subprocess, between the fake API server (HTTPS on
// 127.0.0.1 with a CA and a bearer token, found through a kubeconfig written here) and the fake
// kubelet DRA client (plugin watcher and NodePrepare/Unprepare over unix-socket gRPC), on a copy
// of a committed sysfs fixture (mlx5_ib_2port: one IB HCA, port 1 ACTIVE, port 2 DOWN).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fakes/fake_api_server.h"
#include "fakes/fake_dra_kubelet.h"
#include "fakes/fake_kubelet_slice_cleanup.h"
#include "rdmak8s/records/pod_devices.h"
#include "support/loopback_http.h"
#include "support/spawn.h"
#include "support/sysfs_builder.h"
#include "support/temp_dir.h"
#include "support/test_dirs.h"

namespace rdmak8s {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;
using testing::FakeApiServer;
using testing::FakeApiServerOptions;

constexpr char kDriver[] = "rdma.rdmak8s.io";
constexpr char kNode[] = "node1";
constexpr char kToken[] = "integration-token";
constexpr auto kWait = 30s;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class DraDriverBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The driver is killed mid-request in TearDown: the fake server's write to its closed
    // connection must be an error there, not a SIGPIPE that ends this test process.
    signal(SIGPIPE, SIG_IGN);
    root_ = rdmak8s::testing::NewTempDir();
    ASSERT_FALSE(root_.empty());
    for (const char* d : {"reg", "plugin", "state", "cdi", "pods"}) fs::create_directories(root_ + "/" + d);
    fs::copy(std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/mlx5_ib_2port", root_ + "/sys",
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  }
  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    kubelet_.reset();
    server_.reset();
    fs::remove_all(root_);
  }

  // The fake API server and a kubeconfig naming it (CA file, token), as a developer's would.
  void StartApiServer(bool serve_v1 = true, bool consumable_capacity = true) {
    testing::TestCertificate cert = testing::MakeSelfSignedCertificate();
    FakeApiServerOptions o;
    o.serve_v1 = serve_v1;
    o.consumable_capacity = consumable_capacity;
    o.token = kToken;
    o.tls_cert_pem = cert.cert_pem;
    o.tls_key_pem = cert.key_pem;
    server_ = std::make_unique<FakeApiServer>(o);
    ASSERT_TRUE(server_->Start());
    server_->AddNode(kNode, "node-uid-1");
    std::ofstream(root_ + "/ca.crt") << cert.cert_pem;
    json kubeconfig = {
        {"apiVersion", "v1"}, {"kind", "Config"}, {"current-context", "dev"},
        {"clusters", {{{"name", "fake"}, {"cluster", {{"server", server_->url()}, {"certificate-authority", "ca.crt"}}}}}},
        {"users", {{{"name", "driver"}, {"user", {{"token", kToken}}}}}},
        {"contexts", {{{"name", "dev"}, {"context", {{"cluster", "fake"}, {"user", "driver"}}}}}}};
    std::ofstream(root_ + "/kubeconfig") << kubeconfig.dump(2);
  }

  std::vector<std::string> DriverArgs() const {
    return {"--kubeconfig", root_ + "/kubeconfig", "--node-name", kNode, "--driver-name", kDriver,
            "--plugins-registry-dir", root_ + "/reg", "--plugin-dir", root_ + "/plugin",
            "--state-dir", root_ + "/state", "--cdi-dir", root_ + "/cdi",
            "--pod-devices-dir", root_ + "/pods", "--sysfs-root", root_ + "/sys",
            "--dev-root", root_ + "/dev", "--no-verbs", "--rescan-interval", "1",
            // A port the kernel picks: tests run in parallel (MetricsPort finds it in the log).
            "--metrics-address", "127.0.0.1:0"};
  }

  // The port the driver serves /metrics, /livez and /readyz on, from its log line; 0 when it
  // never said.
  int MetricsPort() {
    const std::string said = "serving /metrics, /livez and /readyz on 127.0.0.1:";
    int port = 0;
    EXPECT_TRUE(WaitUntil([&] {
      const std::string log = ReadAll(root_ + "/stderr.log");
      const size_t at = log.find(said);
      if (at == std::string::npos) return false;
      port = std::stoi(log.substr(at + said.size()));
      return true;
    })) << ReadAll(root_ + "/stderr.log");
    return port;
  }

  static std::string HttpGet(int port, const std::string& path) { return testing::HttpRequest(port, path); }
  static std::string StatusLine(const std::string& r) { return testing::StatusLine(r); }
  static std::string Body(const std::string& r) { return testing::Body(r); }

  // Runs the driver; its stderr goes to <root>/stderr.log. No KUBERNETES_SERVICE_* in its
  // environment: only what the arguments say.
  void Spawn(std::vector<std::string> args) {
    std::string bin = std::string(RDMAK8S_BINARY_DIR) + "/dra/rdmak8s-dra-driver";
    args.insert(args.begin(), bin);
    pid_ = testing::SpawnDaemon(args, {.stderr_path = root_ + "/stderr.log",
                                       .unset_env = {"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"},
                                       .umask = child_umask_});
    ASSERT_GE(pid_, 0);
  }

  // The child's wait status, or -1 when it did not exit within `timeout`.
  int WaitExit(std::chrono::seconds timeout) {
    const int status = testing::WaitForExit(pid_, timeout);
    if (status != -1) pid_ = -1;
    return status;
  }

  bool WaitUntil(const std::function<bool()>& pred) {
    auto deadline = std::chrono::steady_clock::now() + kWait;
    while (!pred()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      int status = 0;
      if (pid_ > 0 && waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        ADD_FAILURE() << "driver exited: " << ReadAll(root_ + "/stderr.log");
        return false;
      }
      std::this_thread::sleep_for(20ms);
    }
    return true;
  }

  // The published device `name` (v1 shape), or null.
  json Device(const std::string& name, const std::string& version = "v1") const {
    for (const auto& s : server_->Slices(version)) {
      for (const auto& d : s["spec"].value("devices", json::array())) {
        if (d.value("name", "") == name) return d;
      }
    }
    return nullptr;
  }

  // The driver started with `args` exits by itself with status 1 (a refusal to start); *log is
  // what it wrote to stderr.
  void SpawnAndExpectARefusal(const std::vector<std::string>& args, std::string* log) {
    Spawn(args);
    int status = WaitExit(30s);
    ASSERT_TRUE(status != -1 && WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 1);
    *log = ReadAll(root_ + "/stderr.log");
  }

  // The fixture's device mlx5_0 published as mlx5-0 (the driver's log when it never is).
  void WaitForTheFixturesSlice() {
    ASSERT_TRUE(WaitUntil([&] { return !Device("mlx5-0").is_null(); })) << ReadAll(root_ + "/stderr.log");
  }

  // NodeUnprepareResources of claim-1 (namespace ml, pod pod-uid-1) succeeds and leaves neither
  // its CDI spec nor its pod's claim record.
  void UnprepareClaim1AndExpectNothingLeft() {
    auto unprep = kubelet_->NodeUnprepareResources({{"ml", "claim-1", "nic"}});
    ASSERT_TRUE(unprep.ok()) << unprep.status().ToString();
    EXPECT_EQ(unprep->claims().at("claim-1").error(), "") << ReadAll(root_ + "/stderr.log");
    EXPECT_FALSE(fs::exists(root_ + "/cdi/rdma.rdmak8s.io-claim_claim-1.json"));
    EXPECT_EQ(ReadPodClaimRecords(root_ + "/pods", "pod-uid-1").status().code(), StatusCode::kNotFound);
  }

  void Register() {
    std::string reg = root_ + "/reg/" + std::string(kDriver) + "-reg.sock";
    ASSERT_TRUE(WaitUntil([&] { return fs::exists(reg); })) << ReadAll(root_ + "/stderr.log");
    kubelet_ = std::make_unique<fake::FakeDraKubelet>();
    auto info = kubelet_->Register(reg);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
  }

  // claim-1 of namespace ml, allocated mlx5-0 for pod pod-uid-1, as a scheduler leaves it.
  void AddClaim1() {
    server_->AddClaim(json::parse(R"({
      "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
      "metadata": {"namespace": "ml", "name": "nic", "uid": "claim-1"},
      "status": {
        "allocation": {"devices": {"results": [
          {"request": "nic", "driver": "rdma.rdmak8s.io", "pool": "node1", "device": "mlx5-0"}]}},
        "reservedFor": [{"resource": "pods", "name": "trainer", "uid": "pod-uid-1"}]}})"));
  }
  void PrepareClaim1() {
    auto prep = kubelet_->NodePrepareResources({{"ml", "claim-1", "nic"}});
    ASSERT_TRUE(prep.ok()) << prep.status().ToString();
    ASSERT_EQ(prep->claims().at("claim-1").error(), "") << ReadAll(root_ + "/stderr.log");
    EXPECT_EQ(prep->claims().at("claim-1").devices_size(), 1);
  }
  // A kubelet's cleanup of this node's slices, as the real one does them, on the fake server.
  std::unique_ptr<fake::FakeKubeletSliceCleanup> KubeletCleanup(std::chrono::milliseconds delay) {
    return std::make_unique<fake::FakeKubeletSliceCleanup>(fake::KubeletSliceCleanupOptions{
        kNode, delay, [this](const std::string& node, const std::string& driver) { server_->DeleteSlices(node, driver); }});
  }

  std::string root_;
  int child_umask_ = -1;  // the driver's umask (Spawn): -1, this test's
  std::unique_ptr<FakeApiServer> server_;
  std::unique_ptr<fake::FakeDraKubelet> kubelet_;
  pid_t pid_ = -1;
};

TEST_F(DraDriverBinaryTest, PublishesThisNodesDevicesWithTheirAttributes) {
  StartApiServer();
  Spawn(DriverArgs());
  ASSERT_NO_FATAL_FAILURE(WaitForTheFixturesSlice());
  auto slices = server_->Slices();
  ASSERT_EQ(slices.size(), 1u);
  const json& spec = slices[0]["spec"];
  EXPECT_EQ(spec["driver"], kDriver);
  EXPECT_EQ(spec["nodeName"], kNode);
  EXPECT_EQ(spec["pool"]["name"], kNode);
  EXPECT_EQ(slices[0]["metadata"]["ownerReferences"][0]["uid"], "node-uid-1");
  json attrs = Device("mlx5-0")["attributes"];
  EXPECT_EQ(attrs["transport"]["string"], "ib");
  EXPECT_EQ(attrs["rdmaDevice"]["string"], "mlx5_0");
  EXPECT_EQ(attrs["activePorts"]["int"], 1);
  EXPECT_TRUE(attrs.contains("resource.kubernetes.io/pcieRoot")) << attrs.dump();
  EXPECT_GE(server_->CountRequests("POST /apis/resource.k8s.io/v1/resourceslices"), 1);
}

// A relative --plugin-dir once failed ("gRPC could not listen on plug/dra.sock.staging.N"):
// every path flag is made absolute against the directory the driver starts in.
TEST_F(DraDriverBinaryTest, RelativePathFlagsAreTakenFromTheStartDirectory) {
  StartApiServer();
  const fs::path before = fs::current_path();
  fs::current_path(root_);  // the child inherits it
  Spawn({"--kubeconfig", "kubeconfig", "--node-name", kNode, "--driver-name", kDriver,
         "--plugins-registry-dir", "reg", "--plugin-dir", "plugin", "--state-dir", "state",
         "--cdi-dir", "cdi", "--pod-devices-dir", "pods", "--sysfs-root", "sys", "--dev-root", "dev",
         "--no-verbs", "--rescan-interval", "1"});
  const std::string root = fs::current_path().string();
  fs::current_path(before);
  Register();
  fake::FakeDraKubelet kubelet;
  auto info = kubelet.Register(root_ + "/reg/" + std::string(kDriver) + "-reg.sock");
  ASSERT_TRUE(info.ok()) << info.status().ToString() << ReadAll(root_ + "/stderr.log");
  EXPECT_EQ(info->endpoint(), root + "/plugin/dra.sock");
  WaitForTheFixturesSlice();
}

TEST_F(DraDriverBinaryTest, OnAV1beta1OnlyServerPublishesV1beta1Slices) {
  StartApiServer(/*serve_v1=*/false);
  Spawn(DriverArgs());
  ASSERT_TRUE(WaitUntil([&] { return !Device("mlx5-0", "v1beta1").is_null(); })) << ReadAll(root_ + "/stderr.log");
  EXPECT_TRUE(Device("mlx5-0", "v1beta1").contains("basic"));
  EXPECT_GE(server_->CountRequests("POST /apis/resource.k8s.io/v1beta1/resourceslices"), 1);
  EXPECT_EQ(server_->CountRequests("POST /apis/resource.k8s.io/v1/resourceslices"), 0);
}

TEST_F(DraDriverBinaryTest, PreparesAnAllocatedClaimForItsPodsAndUnpreparesIt) {
  StartApiServer();
  Spawn(DriverArgs());
  Register();
  server_->AddClaim(json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"namespace": "ml", "name": "nic", "uid": "claim-1"},
    "spec": {"devices": {"requests": [{"name": "nic", "exactly": {"deviceClassName": "rdma-ib"}}]}},
    "status": {
      "allocation": {"devices": {"results": [
        {"request": "nic", "driver": "rdma.rdmak8s.io", "pool": "node1", "device": "mlx5-0"}]}},
      "reservedFor": [{"resource": "pods", "name": "trainer", "uid": "pod-uid-1"}]}})"));

  auto prep = kubelet_->NodePrepareResources({{"ml", "claim-1", "nic"}});
  ASSERT_TRUE(prep.ok()) << prep.status().ToString();
  const auto& answer = prep->claims().at("claim-1");
  ASSERT_EQ(answer.error(), "") << ReadAll(root_ + "/stderr.log");
  ASSERT_EQ(answer.devices_size(), 1);
  EXPECT_EQ(answer.devices(0).pool_name(), kNode);
  EXPECT_EQ(answer.devices(0).device_name(), "mlx5-0");
  ASSERT_EQ(answer.devices(0).cdi_device_ids_size(), 1);
  EXPECT_EQ(answer.devices(0).cdi_device_ids(0), "rdma.rdmak8s.io/claim=claim-1-mlx5-0");
  const std::string spec = root_ + "/cdi/rdma.rdmak8s.io-claim_claim-1.json";
  ASSERT_TRUE(fs::exists(spec));
  EXPECT_NE(ReadAll(spec).find("/dev/infiniband/uverbs"), std::string::npos);
  auto records = ReadPodClaimRecords(root_ + "/pods", "pod-uid-1");
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  ASSERT_EQ(records->size(), 1u);
  EXPECT_EQ((*records)[0].devices.at(0).rdma_dev, "mlx5_0");

  ASSERT_NO_FATAL_FAILURE(UnprepareClaim1AndExpectNothingLeft());
}

// Issue 34 item 1: the binary writes the claim's status.devices entry and removes it at unprepare.
TEST_F(DraDriverBinaryTest, APreparedClaimsStatusSaysWhatThePodGotUntilItIsUnprepared) {
  StartApiServer();
  server_->GrantClaimStatus({kDriver});
  Spawn(DriverArgs());
  Register();
  AddClaim1();
  ASSERT_NO_FATAL_FAILURE(PrepareClaim1());
  auto devices = [&] { return server_->Claim("ml", "nic")["status"].value("devices", json::array()); };
  ASSERT_TRUE(WaitUntil([&] { return !devices().empty(); })) << ReadAll(root_ + "/stderr.log");
  const json entry = devices()[0];
  EXPECT_EQ(entry["driver"], kDriver);
  EXPECT_EQ(entry["device"], "mlx5-0");
  EXPECT_EQ(entry["data"]["rdmaDev"], "mlx5_0");
  EXPECT_EQ(entry["conditions"][0]["type"], "Ready");
  ASSERT_NO_FATAL_FAILURE(UnprepareClaim1AndExpectNothingLeft());
  EXPECT_TRUE(WaitUntil([&] { return devices().empty(); })) << ReadAll(root_ + "/stderr.log");
}

TEST_F(DraDriverBinaryTest, WithoutTheStatusRbacTheClaimPreparesAndTheLogNamesWhatIsMissing) {
  StartApiServer();  // no GrantClaimStatus: a token without resourceclaims/driver
  Spawn(DriverArgs());
  Register();
  AddClaim1();
  ASSERT_NO_FATAL_FAILURE(PrepareClaim1());
  EXPECT_TRUE(WaitUntil([&] {
    return ReadAll(root_ + "/stderr.log").find("requires resource=\"resourceclaims/driver\"") != std::string::npos;
  })) << ReadAll(root_ + "/stderr.log");
  EXPECT_EQ(server_->Claim("ml", "nic")["status"].value("devices", json::array()), json::array());
  ASSERT_NO_FATAL_FAILURE(UnprepareClaim1AndExpectNothingLeft());
}

TEST_F(DraDriverBinaryTest, PortDownRepublishesTheSliceAndSigtermWithDeleteOnExitRemovesIt) {
  StartApiServer();
  auto args = DriverArgs();
  args.push_back("--delete-slices-on-exit");
  Spawn(args);
  ASSERT_NO_FATAL_FAILURE(WaitForTheFixturesSlice());
  EXPECT_FALSE(Device("mlx5-0").contains("taints"));

  ASSERT_TRUE(testing::WriteWhole(root_, root_ + "/sys/class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n").ok());
  ASSERT_TRUE(WaitUntil([&] {
    json d = Device("mlx5-0");
    return !d.is_null() && d["attributes"]["activePorts"]["int"] == 0;
  })) << ReadAll(root_ + "/stderr.log");
  json d = Device("mlx5-0");
  EXPECT_EQ(d["attributes"]["portState"]["string"], "DOWN");
  ASSERT_TRUE(d.contains("taints")) << d.dump();
  EXPECT_EQ(d["taints"][0]["key"], std::string(kDriver) + "/unhealthy");

  ASSERT_EQ(kill(pid_, SIGTERM), 0);
  int status = WaitExit(30s);
  ASSERT_NE(status, -1) << "driver did not exit after SIGTERM";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << ReadAll(root_ + "/stderr.log");
  EXPECT_TRUE(server_->Slices().empty());
  EXPECT_FALSE(fs::exists(root_ + "/reg/" + std::string(kDriver) + "-reg.sock"));
}

TEST_F(DraDriverBinaryTest, SigtermWithoutDeleteOnExitLeavesTheSlicesForTheNextInstance) {
  StartApiServer();
  Spawn(DriverArgs());
  ASSERT_NO_FATAL_FAILURE(WaitForTheFixturesSlice());
  ASSERT_EQ(kill(pid_, SIGTERM), 0);
  int status = WaitExit(30s);
  ASSERT_TRUE(status != -1 && WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(server_->Slices().size(), 1u);
}

TEST_F(DraDriverBinaryTest, ADevicesFileThatIsNotValidStopsTheStartNamingTheKey) {
  StartApiServer();
  std::ofstream(root_ + "/devices.json") << R"({"selectors": {"transports": ["rocev2"]}})";
  auto args = DriverArgs();
  args.push_back("--devices");
  args.push_back(root_ + "/devices.json");
  std::string log;
  ASSERT_NO_FATAL_FAILURE(SpawnAndExpectARefusal(args, &log));
  EXPECT_NE(log.find(root_ + "/devices.json"), std::string::npos) << log;
  EXPECT_NE(log.find("$.selectors.transports[0]"), std::string::npos) << log;
  EXPECT_TRUE(server_->Slices().empty());
}

TEST_F(DraDriverBinaryTest, WithSharesTwoClaimsOnTwoSharesOfOneDeviceBothPrepareIt) {
  StartApiServer(true, /*consumable_capacity=*/false);
  auto args = DriverArgs();
  args.insert(args.end(), {"--shares", "2"});
  Spawn(args);
  ASSERT_TRUE(WaitUntil([&] { return !Device("mlx5-0-1").is_null(); })) << ReadAll(root_ + "/stderr.log");
  EXPECT_FALSE(Device("mlx5-0-0").is_null());
  Register();
  for (const char* k : {"0", "1"}) {
    json claim = json::parse(R"({
      "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
      "metadata": {"namespace": "ml"},
      "status": {"allocation": {"devices": {"results": [
        {"request": "nic", "driver": "rdma.rdmak8s.io", "pool": "node1"}]}}}})");
    claim["metadata"]["name"] = std::string("nic-") + k;
    claim["metadata"]["uid"] = std::string("share-claim-") + k;
    claim["status"]["allocation"]["devices"]["results"][0]["device"] = std::string("mlx5-0-") + k;
    server_->AddClaim(claim);
  }
  auto prep = kubelet_->NodePrepareResources({{"ml", "share-claim-0", "nic-0"}, {"ml", "share-claim-1", "nic-1"}});
  ASSERT_TRUE(prep.ok()) << prep.status().ToString();
  for (const char* k : {"0", "1"}) {
    const auto& answer = prep->claims().at(std::string("share-claim-") + k);
    ASSERT_EQ(answer.error(), "") << ReadAll(root_ + "/stderr.log");
    ASSERT_EQ(answer.devices_size(), 1);
    EXPECT_EQ(answer.devices(0).device_name(), std::string("mlx5-0-") + k);
    EXPECT_NE(ReadAll(root_ + "/cdi/rdma.rdmak8s.io-claim_share-claim-" + k + ".json").find("/dev/infiniband/uverbs"),
              std::string::npos);
  }
}

TEST_F(DraDriverBinaryTest, WhileTheApiServerIsUnreachableCheckpointedClaimsAreAnsweredAndNewOnesFail) {
  StartApiServer();
  Spawn(DriverArgs());
  Register();
  server_->AddClaim(json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"namespace": "ml", "name": "nic", "uid": "claim-1"},
    "status": {
      "allocation": {"devices": {"results": [
        {"request": "nic", "driver": "rdma.rdmak8s.io", "pool": "node1", "device": "mlx5-0"}]}},
      "reservedFor": [{"resource": "pods", "name": "trainer", "uid": "pod-uid-1"}]}})"));
  auto prep = kubelet_->NodePrepareResources({{"ml", "claim-1", "nic"}});
  ASSERT_TRUE(prep.ok()) << prep.status().ToString();
  ASSERT_EQ(prep->claims().at("claim-1").error(), "") << ReadAll(root_ + "/stderr.log");
  ASSERT_EQ(kill(pid_, SIGTERM), 0);
  int status = WaitExit(30s);
  ASSERT_TRUE(status != -1 && WIFEXITED(status));

  // The kubeconfig still names the server, which is down now: the restarted driver must serve
  // kubelet all the same.
  server_->Stop();
  kubelet_.reset();
  Spawn(DriverArgs());
  Register();
  auto again = kubelet_->NodePrepareResources({{"ml", "claim-1", "nic"}});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->claims().at("claim-1").error(), "") << ReadAll(root_ + "/stderr.log");
  EXPECT_EQ(again->claims().at("claim-1").devices_size(), 1);

  auto fresh = kubelet_->NodePrepareResources({{"ml", "claim-2", "other"}});
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  const std::string error = fresh->claims().at("claim-2").error();
  EXPECT_NE(error.find("claim-2"), std::string::npos) << error;
  EXPECT_NE(error.find("resource.k8s.io versions"), std::string::npos) << error;

  ASSERT_NO_FATAL_FAILURE(UnprepareClaim1AndExpectNothingLeft());
}

TEST_F(DraDriverBinaryTest, SigtermDuringA503BackoffExitsAndSaysWhichSlicesAreLeft) {
  StartApiServer();
  auto args = DriverArgs();
  args.push_back("--delete-slices-on-exit");
  Spawn(args);
  ASSERT_NO_FATAL_FAILURE(WaitForTheFixturesSlice());
  // From now on every answer is a 503 asking for 30 s of patience; a port going down makes the
  // slice loop publish into it.
  const int gets = server_->CountRequests("GET");
  server_->FailNext(503, 1000000, "30");
  ASSERT_TRUE(testing::WriteWhole(root_, root_ + "/sys/class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n").ok());
  ASSERT_TRUE(WaitUntil([&] { return server_->CountRequests("GET") > gets; }));

  ASSERT_EQ(kill(pid_, SIGTERM), 0);
  int status = WaitExit(30s);
  ASSERT_NE(status, -1) << "driver did not exit after SIGTERM: " << ReadAll(root_ + "/stderr.log");
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  const std::string log = ReadAll(root_ + "/stderr.log");
  EXPECT_NE(log.find("retries stopped: shutting down"), std::string::npos) << log;
  EXPECT_NE(log.find("delete ResourceSlices on exit: gave up after "), std::string::npos) << log;
  EXPECT_NE(log.find("spec.nodeName=node1,spec.driver=rdma.rdmak8s.io"), std::string::npos) << log;
  EXPECT_EQ(server_->Slices().size(), 1u);
}

TEST_F(DraDriverBinaryTest, WithoutAnyApiServerConfigurationItRefusesToStartNamingWhatIsMissing) {
  auto args = DriverArgs();
  args.erase(args.begin(), args.begin() + 2);  // no --kubeconfig
  args.push_back("--service-account-dir");
  args.push_back(root_ + "/no-such-dir");
  std::string log;
  ASSERT_NO_FATAL_FAILURE(SpawnAndExpectARefusal(args, &log));
  EXPECT_NE(log.find("KUBERNETES_SERVICE_HOST"), std::string::npos) << log;
  EXPECT_NE(log.find("--kubeconfig"), std::string::npos) << log;
  EXPECT_NE(log.find("--no-api-server"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(root_ + "/reg/" + std::string(kDriver) + "-reg.sock"));
}

TEST_F(DraDriverBinaryTest, AKubeletRestartDeletesTheSlicesAndTheyAreBackForTheNextClaim) {
  StartApiServer();
  Spawn(DriverArgs());
  ASSERT_NO_FATAL_FAILURE(WaitForTheFixturesSlice());
  Register();
  // kubelet restarts: at its start it deletes every slice of the node, then registers the
  // driver again.
  auto kubelet = KubeletCleanup(std::chrono::seconds(30));
  const auto deleted = std::chrono::steady_clock::now();
  kubelet->Start();
  ASSERT_TRUE(server_->Slices().empty());
  Register();
  ASSERT_TRUE(WaitUntil([&] { return !Device("mlx5-0").is_null(); }))
      << "the slices kubelet deleted were never published again: " << ReadAll(root_ + "/stderr.log");
  std::cout << "[ figure ] slices present again "
            << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - deleted).count()
            << " ms after kubelet deleted them at its start\n";
  AddClaim1();
  ASSERT_NO_FATAL_FAILURE(PrepareClaim1());
}

TEST_F(DraDriverBinaryTest, SlicesKubeletDeletesAfterTheRegistrationSocketWentAreRepublished) {
  StartApiServer();
  Spawn(DriverArgs());
  ASSERT_NO_FATAL_FAILURE(WaitForTheFixturesSlice());
  Register();
  const std::string reg = root_ + "/reg/" + std::string(kDriver) + "-reg.sock";
  auto kubelet = KubeletCleanup(std::chrono::milliseconds(0));  // the driver-cleanup, without its 30 s
  ASSERT_TRUE(kubelet->WatchDriver(reg, kDriver));
  ASSERT_TRUE(fs::remove(reg));
  ASSERT_TRUE(WaitUntil([&] { return kubelet->driver_cleanups() >= 1; }));
  EXPECT_TRUE(WaitUntil([&] { return !Device("mlx5-0").is_null() && fs::exists(reg); }))
      << ReadAll(root_ + "/stderr.log");
}

// kubelet's plugins_registry removed and made again (a node reset, a hostPath re-created): the
// directory's return is an event (node/socket_dir_watch.h), the registration socket is served
// in the new directory, and that directory is watched: a later removal is served again too.
TEST_F(DraDriverBinaryTest, ARegistryDirectoryRemovedAndMadeAgainGetsTheRegistrationSocketBack) {
  StartApiServer();
  Spawn(DriverArgs());
  ASSERT_NO_FATAL_FAILURE(WaitForTheFixturesSlice());
  Register();
  const std::string reg = root_ + "/reg/" + std::string(kDriver) + "-reg.sock";
  // Renamed away, then removed: the driver serves again on every event, and would race a
  // remove_all of the directory in place ("Directory not empty").
  fs::rename(root_ + "/reg", root_ + "/reg.old");
  fs::remove_all(root_ + "/reg.old");
  fs::create_directories(root_ + "/reg");
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(reg); })) << ReadAll(root_ + "/stderr.log");
  Register();
  ASSERT_TRUE(fs::remove(reg));
  EXPECT_TRUE(WaitUntil([&] { return fs::exists(reg); })) << ReadAll(root_ + "/stderr.log");
  Register();
}

// Found by a review: started with umask 000, the driver made its sockets and its plugin
// directory 0777, and any local user could call it. Every mode is set, whatever the umask.
TEST_F(DraDriverBinaryTest, UnderUmask000ItsSocketsAndDirectoriesAreItsOwnersAlone) {
  StartApiServer();
  child_umask_ = 0;
  std::vector<std::string> args = DriverArgs();
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--plugin-dir" || args[i] == "--state-dir" || args[i] == "--pod-devices-dir") {
      args[i + 1] = root_ + "/new" + args[i + 1].substr(root_.size());
    }
  }
  Spawn(args);
  ASSERT_NO_FATAL_FAILURE(WaitForTheFixturesSlice());
  Register();
  AddClaim1();
  ASSERT_NO_FATAL_FAILURE(PrepareClaim1());
  auto mode = [](const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    return st.st_mode & 07777;
  };
  EXPECT_EQ(mode(root_ + "/reg/" + std::string(kDriver) + "-reg.sock"), 0600u);
  EXPECT_EQ(mode(root_ + "/new"), 0755u);
  EXPECT_EQ(mode(root_ + "/new/plugin"), 0750u);
  EXPECT_EQ(mode(root_ + "/new/plugin/dra.sock"), 0600u);
  EXPECT_EQ(mode(root_ + "/new/state"), 0700u);
  EXPECT_EQ(mode(root_ + "/new/pods"), 0700u);
  EXPECT_EQ(mode(root_ + "/new/pods/pod-uid-1"), 0700u);
  EXPECT_EQ(mode(root_ + "/cdi/rdma.rdmak8s.io-claim_claim-1.json"), 0644u);
}

TEST_F(DraDriverBinaryTest, ANodeRecreatedWithANewUidOwnsTheRepublishedSlices) {
  StartApiServer();
  Spawn(DriverArgs());
  ASSERT_NO_FATAL_FAILURE(WaitForTheFixturesSlice());
  server_->DeleteNode(kNode);  // the garbage collector deletes the slices it owned
  ASSERT_TRUE(server_->Slices().empty());
  server_->AddNode(kNode, "node-uid-2");
  ASSERT_TRUE(WaitUntil([&] {
    auto slices = server_->Slices();
    return slices.size() == 1u && slices[0]["metadata"]["ownerReferences"][0]["uid"] == "node-uid-2";
  })) << ReadAll(root_ + "/stderr.log");
}

TEST_F(DraDriverBinaryTest, AfterTheApiServerUpgradesFromV1beta1ToV1ItPublishesAndReadsClaimsInV1) {
  StartApiServer(/*serve_v1=*/false);
  Spawn(DriverArgs());
  ASSERT_TRUE(WaitUntil([&] { return !Device("mlx5-0", "v1beta1").is_null(); })) << ReadAll(root_ + "/stderr.log");
  Register();
  server_->SetServedVersions(/*v1=*/true, /*v1beta1=*/false);
  server_->EndWatches();  // the upgraded server restarted
  // The driver's watch comes back to a 404: it discovers the version again and relists in v1.
  ASSERT_TRUE(WaitUntil([&] { return server_->CountRequests("GET /apis/resource.k8s.io/v1/resourceslices") >= 1; }))
      << ReadAll(root_ + "/stderr.log");
  EXPECT_FALSE(Device("mlx5-0").is_null());
  AddClaim1();
  ASSERT_NO_FATAL_FAILURE(PrepareClaim1());
}

// Issue 26: the DaemonSet's readiness probe. Not ready before kubelet registered the driver, nor
// before the slices were published once (a hung API server holds the first publish here).
TEST_F(DraDriverBinaryTest, ReadyzIs503UntilKubeletRegisteredItAndTheSlicesArePublishedThen200) {
  StartApiServer();
  server_->HoldRequests("/apis/resource.k8s.io");
  Spawn(DriverArgs());
  const int port = MetricsPort();
  ASSERT_GT(port, 0);
  std::string r = HttpGet(port, "/readyz");
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 503 Service Unavailable");
  EXPECT_EQ(Body(r), "not registered with kubelet\n");

  Register();
  r = HttpGet(port, "/readyz");
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 503 Service Unavailable");
  EXPECT_EQ(Body(r), "ResourceSlices not published yet\n");
  EXPECT_EQ(StatusLine(HttpGet(port, "/livez")), "HTTP/1.1 200 OK");

  server_->ReleaseHeld();
  EXPECT_TRUE(WaitUntil([&] { return StatusLine(HttpGet(port, "/readyz")) == "HTTP/1.1 200 OK"; }))
      << HttpGet(port, "/readyz") << ReadAll(root_ + "/stderr.log");
  const std::string metrics = Body(HttpGet(port, "/metrics"));
  EXPECT_NE(metrics.find("\nrdmak8s_ready 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\nrdmak8s_dra_published_devices 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("rdmak8s_dra_device_healthy{pool=\"node1\",device=\"mlx5-0\",rdma_dev=\"mlx5_0\"} 1"),
            std::string::npos) << metrics;
}

// Issue 26: the liveness probe is the driver's own loops, never the API server: a prepare whose
// claim read hangs leaves /livez (and /readyz, and a scrape) answering.
TEST_F(DraDriverBinaryTest, LivezAnswersWhileAPrepareWaitsOnAHungApiServer) {
  StartApiServer();
  Spawn(DriverArgs());
  const int port = MetricsPort();
  ASSERT_GT(port, 0);
  WaitForTheFixturesSlice();
  Register();
  AddClaim1();
  ASSERT_TRUE(WaitUntil([&] { return StatusLine(HttpGet(port, "/readyz")) == "HTTP/1.1 200 OK"; }))
      << HttpGet(port, "/readyz");

  server_->HoldRequests("/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims");
  StatusOr<fake::v1::NodePrepareResourcesResponse> prep = InternalError("not called");
  std::thread kubelet([&] { prep = kubelet_->NodePrepareResources({{"ml", "claim-1", "nic"}}); });
  const bool held = server_->WaitForHeld(1, std::chrono::milliseconds(kWait));
  std::string live = HttpGet(port, "/livez");
  std::string ready = HttpGet(port, "/readyz");
  std::string scrape = HttpGet(port, "/metrics");
  server_->ReleaseHeld();
  kubelet.join();
  ASSERT_TRUE(held) << "the claim read never reached the API server: " << ReadAll(root_ + "/stderr.log");
  EXPECT_EQ(StatusLine(live), "HTTP/1.1 200 OK");
  EXPECT_EQ(Body(live), "ok\n");
  EXPECT_EQ(StatusLine(ready), "HTTP/1.1 200 OK");
  EXPECT_EQ(StatusLine(scrape), "HTTP/1.1 200 OK");

  // Counted once it answered, whichever way (a machine slow enough ends the read at its deadline),
  // in the first scrape computed after the one above (a scrape is shared for 2 s).
  ASSERT_TRUE(prep.ok()) << prep.status().ToString();
  const bool ok = prep->claims().at("claim-1").error().empty();
  const std::string counted = std::string("rdmak8s_dra_prepare_total{result=\"") + (ok ? "ok" : "error") + "\"} 1";
  std::string metrics;
  EXPECT_TRUE(WaitUntil([&] {
    metrics = Body(HttpGet(port, "/metrics"));
    return metrics.find(counted) != std::string::npos;
  })) << metrics;
  EXPECT_NE(metrics.find("rdmak8s_dra_prepare_duration_seconds_count 1"), std::string::npos) << metrics;
}

}  // namespace
}  // namespace rdmak8s
