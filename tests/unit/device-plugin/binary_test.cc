// The real rdmak8s-device-plugin binary as a subprocess, driven by the fake kubelet: signals.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "support/fake_kubelet.h"
#include "support/loopback_http.h"
#include "support/spawn.h"
#include "support/temp_dir.h"
#include "support/test_dirs.h"

namespace rdmak8s::dp {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Resp = v1beta1::ListAndWatchResponse;

class BinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = rdmak8s::testing::NewTempDir();
    ASSERT_FALSE(root_.empty());
    fs::create_directories(root_ + "/k");
    fs::create_directories(root_ + "/cfg");
    fs::create_directories(root_ + "/real");
    fs::copy(std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/rxe_veth", root_ + "/sys",
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    kubelet_ = std::make_unique<fake::FakeKubelet>(root_ + "/k");
    ASSERT_TRUE(kubelet_->Start().ok());
  }
  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    kubelet_.reset();
    fs::remove_all(root_);
  }

  // `stderr_path` non-empty: the plugin's stderr goes to that file.
  void Spawn(const std::string& config, std::vector<std::string> extra = {},
             const std::string& stderr_path = "") {
    std::string bin = std::string(RDMAK8S_BINARY_DIR) + "/device-plugin/rdmak8s-device-plugin";
    std::vector<std::string> args = {bin, "--config", config, "--kubelet-dir", root_ + "/k",
                                     "--sysfs-root", root_ + "/sys", "--metrics-address",
                                     metrics_address_, "--no-verbs"};
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = testing::SpawnDaemon(args, {.stderr_path = stderr_path});
    ASSERT_GE(pid_, 0);
  }

  // Waits (bounded) for the child to exit; returns its wait status or -1.
  int WaitExit(std::chrono::seconds timeout) {
    const int status = testing::WaitForExit(pid_, timeout);
    if (status != -1) pid_ = -1;
    return status;
  }

  std::string root_;
  std::string metrics_address_ = "127.0.0.1:0";  // Spawn's: a port the kernel picks
  std::unique_ptr<fake::FakeKubelet> kubelet_;
  pid_t pid_ = -1;
};

TEST_F(BinaryTest, SigtermStopsServingRemovesSocketAndExitsZero) {
  std::ofstream(root_ + "/cfg/c.json") << R"({"pools": [{"name": "soft", "capacity": 2, "selectors": {}}]})";
  Spawn(root_ + "/cfg/c.json");
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/soft", 1, 20s));
  ASSERT_TRUE(kubelet_->WaitForDevices("rdma/soft", [](const Resp& r) { return r.devices_size() == 2; }, 10s));
  ASSERT_TRUE(fs::exists(root_ + "/k/rdmak8s-rdma-soft.sock"));
  ASSERT_EQ(kill(pid_, SIGTERM), 0);
  int status = WaitExit(20s);
  ASSERT_NE(status, -1) << "plugin did not exit after SIGTERM";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_FALSE(fs::exists(root_ + "/k/rdmak8s-rdma-soft.sock"));
  EXPECT_TRUE(fs::exists(root_ + "/k/kubelet.sock")) << "kubelet's socket is not ours to remove";
}

// Path flags are made absolute against the directory the plugin starts in: a relative
// --dev-root once went as is into the CDI spec's host paths, which the runtime resolves
// against its own directory.
TEST_F(BinaryTest, RelativePathFlagsAreTakenFromTheStartDirectory) {
  std::ofstream(root_ + "/cfg/c.json") << R"({"pools": [{"name": "soft", "capacity": 2, "selectors": {}}]})";
  const fs::path before = fs::current_path();
  fs::current_path(root_);  // the child inherits it
  const std::string root = fs::current_path().string();
  std::string bin = std::string(RDMAK8S_BINARY_DIR) + "/device-plugin/rdmak8s-device-plugin";
  pid_ = testing::SpawnDaemon({bin, "--config", "cfg/c.json", "--kubelet-dir", "k", "--sysfs-root", "sys",
                               "--cdi", "--cdi-dir", "cdi", "--dev-root", "dev", "--metrics-address",
                               "127.0.0.1:0", "--no-verbs"});
  fs::current_path(before);
  ASSERT_GE(pid_, 0);
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/soft", 1, 20s));
  ASSERT_TRUE(kubelet_->WaitForDevices("rdma/soft", [](const Resp& r) { return r.devices_size() == 2; }, 10s));
  const std::string spec_path = root_ + "/cdi/rdmak8s-rdma-soft.json";
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!fs::exists(spec_path) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(fs::exists(spec_path)) << "no CDI spec within 20 s";
  std::ifstream in(spec_path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string spec = text.str();
  int host_paths = 0;
  const std::regex host_path(R"re("hostPath"\s*:\s*"([^"]*)")re");
  for (auto it = std::sregex_iterator(spec.begin(), spec.end(), host_path);
       it != std::sregex_iterator(); ++it) {
    EXPECT_EQ((*it)[1].str().rfind(root + "/dev/", 0), 0u) << (*it)[1].str();
    ++host_paths;
  }
  EXPECT_GT(host_paths, 0) << spec;
}

TEST_F(BinaryTest, SighupReloadsAConfigInotifyCannotSee) {
  // The watched directory holds only a symlink to a file elsewhere: editing that file is
  // invisible to the directory watch, so SIGHUP is how the operator says "reload".
  std::ofstream(root_ + "/real/c.json") << R"({"pools": [{"name": "a", "capacity": 1, "selectors": {}}]})";
  fs::create_symlink(root_ + "/real/c.json", root_ + "/cfg/c.json");
  Spawn(root_ + "/cfg/c.json");
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/a", 1, 20s));
  std::ofstream(root_ + "/real/c.json") << R"({"pools": [{"name": "b", "capacity": 1, "selectors": {}}]})";
  ASSERT_EQ(kill(pid_, SIGHUP), 0);
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/b", 1, 20s));
  EXPECT_FALSE(fs::exists(root_ + "/k/rdmak8s-rdma-a.sock"));
  ASSERT_EQ(kill(pid_, SIGINT), 0);
  int status = WaitExit(20s);
  ASSERT_TRUE(status != -1 && WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// Issue 24 item 13: SIGHUP also rescans the devices. rxe0 is registered while the plugin runs
// and no event reaches it (the fixture is not the kernel): only the rescan SIGHUP asks for finds
// it before the hour-long rescan interval.
TEST_F(BinaryTest, SighupRescansAndADeviceNoEventAnnouncedAppears) {
  std::ofstream(root_ + "/cfg/c.json") << R"({"pools": [{"name": "soft", "capacity": 2, "selectors": {}}]})";
  fs::rename(root_ + "/sys/class/infiniband/rxe0", root_ + "/rxe0.link");
  Spawn(root_ + "/cfg/c.json", {"--rescan-interval", "3600"});
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/soft", 1, 20s));
  ASSERT_TRUE(kubelet_->WaitForDevices("rdma/soft", [](const Resp& r) { return r.devices_size() == 0; }, 20s));
  fs::rename(root_ + "/rxe0.link", root_ + "/sys/class/infiniband/rxe0");
  ASSERT_EQ(kill(pid_, SIGHUP), 0);
  EXPECT_TRUE(kubelet_->WaitForDevices("rdma/soft", [](const Resp& r) { return r.devices_size() == 2; }, 20s))
      << "SIGHUP did not rescan";
}

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST_F(BinaryTest, EachAllocatedContainerIsOneKlogInfoLineAndDebugNeedsV1) {
  std::ofstream(root_ + "/cfg/c.json") << R"({"pools": [{"name": "soft", "capacity": 2, "selectors": {}}]})";
  std::string log = root_ + "/stderr.log";
  Spawn(root_ + "/cfg/c.json", {}, log);
  ASSERT_TRUE(kubelet_->WaitForDevices("rdma/soft", [](const Resp& r) { return r.devices_size() == 2; }, 20s));
  auto a = kubelet_->Allocate("rdma/soft", {{"rxe0-0"}, {"rxe0-1"}});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_EQ(kill(pid_, SIGTERM), 0);
  ASSERT_NE(WaitExit(20s), -1);
  // klog: Lmmdd hh:mm:ss.uuuuuu threadid file:line] msg
  const std::regex klog(R"(^[IWEDT]\d{4} \d{2}:\d{2}:\d{2}\.\d{6} +\d+ [a-z_]+\.cc:\d+\] .+$)");
  std::vector<std::string> allocs;
  for (const auto& line : Lines(log)) {
    EXPECT_TRUE(std::regex_match(line, klog)) << line;
    EXPECT_NE(line[0], 'D') << "no debug lines at -v 0: " << line;
    if (line.find("] allocate ") != std::string::npos) allocs.push_back(line.substr(line.find("] ") + 2));
  }
  EXPECT_EQ(allocs, (std::vector<std::string>{"allocate rdma/soft: [rxe0-0] -> devices [rxe0]",
                                              "allocate rdma/soft: [rxe0-1] -> devices [rxe0]"}));

  Spawn(root_ + "/cfg/c.json", {"-v", "1"}, log);
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/soft", 2, 20s));
  ASSERT_EQ(kill(pid_, SIGTERM), 0);
  ASSERT_NE(WaitExit(20s), -1);
  bool debug = false;
  for (const auto& line : Lines(log)) debug |= line[0] == 'D' && std::regex_match(line, klog);
  EXPECT_TRUE(debug) << "-v 1 logs debug lines";
}

TEST_F(BinaryTest, InvalidConfigAtStartExitsNonZeroNamingTheProblem) {
  std::ofstream(root_ + "/cfg/c.json") << R"({"pools": [{"name": "a", "selectors": {"isVF": 1}}]})";
  std::string bin = std::string(RDMAK8S_BINARY_DIR) + "/device-plugin/rdmak8s-device-plugin";
  std::string cmd = bin + " --config " + root_ + "/cfg/c.json --kubelet-dir " + root_ +
                    "/k --sysfs-root " + root_ + "/sys --metrics-address '' --no-verbs 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof(buf), p)) out += buf;
  int status = pclose(p);
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_NE(out.find("$.pools[0].selectors.isVF: not a boolean (number)"), std::string::npos) << out;
}

// Found by a review: a process of `nobody` listening on the metrics address first made the
// plugin exit, so any local user could take RDMA from the node's new pods. The plugin keeps
// serving kubelet, says why the probes are not there, and takes the address once it is free.
TEST_F(BinaryTest, ABusyMetricsPortLeavesKubeletServedAndIsTakenOnceFree) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof(a);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const int port = ntohs(a.sin_port);
  const std::string address = "127.0.0.1:" + std::to_string(port);
  std::ofstream(root_ + "/cfg/c.json") << R"({"pools": [{"name": "soft", "capacity": 2, "selectors": {}}]})";
  const std::string log = root_ + "/stderr.log";
  metrics_address_ = address;
  Spawn(root_ + "/cfg/c.json", {}, log);
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/soft", 1, 20s));
  ASSERT_TRUE(kubelet_->WaitForDevices("rdma/soft", [](const Resp& r) { return r.devices_size() == 2; }, 10s));
  auto read_log = [&] {
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  EXPECT_NE(read_log().find("metrics listen on " + address + ": bind: Address already in use: serving "
                            "kubelet without /metrics, /livez and /readyz until the address is free"),
            std::string::npos)
      << read_log();
  close(fd);
  // The retry's back-off is at most 30 s; the test's bound is kubelet's own patience.
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  std::string livez;
  while (std::chrono::steady_clock::now() < deadline) {
    livez = testing::StatusLine(testing::HttpRequest(port, "/livez"));
    if (livez == "HTTP/1.1 200 OK") break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(livez, "HTTP/1.1 200 OK") << read_log();
  EXPECT_NE(read_log().find("the metrics address is free again"), std::string::npos) << read_log();
}

TEST(BinaryVersionTest, VersionFlagPrintsTheProjectVersion) {
  std::string bin = std::string(RDMAK8S_BINARY_DIR) + "/device-plugin/rdmak8s-device-plugin";
  FILE* p = popen((bin + " --version 2>&1").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[256];
  while (fgets(buf, sizeof(buf), p)) out += buf;
  EXPECT_EQ(WEXITSTATUS(pclose(p)), 0);
  EXPECT_EQ(out, std::string("rdmak8s-device-plugin ") + RDMAK8S_VERSION + "\n");
}

}  // namespace
}  // namespace rdmak8s::dp
