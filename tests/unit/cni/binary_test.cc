// The built `rdmak8s` binary as a runtime sees it: spec answers on stdout, its linkage, and what
// it does on this machine, whose kernel has no RDMA at all.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cni_test_util.h"

#include "support/test_dirs.h"

namespace rdmak8s::cni {
namespace {

using nlohmann::json;

const std::string kBinary = std::string(RDMAK8S_BINARY_DIR) + "/cni/rdmak8s";

struct Output {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs the binary with exactly `env` and `input` on stdin.
Output RunBinary(const std::map<std::string, std::string>& env, const std::string& input) {
  testing::TempDir t;
  const std::string in = t.path() + "/in", out = t.path() + "/out", err = t.path() + "/err";
  EXPECT_TRUE(testing::WriteFile(in, input));
  std::string cmd = "env -i";
  for (const auto& [k, v] : env) cmd += " '" + k + "=" + v + "'";
  cmd += " " + kBinary + " <" + in + " >" + out + " 2>" + err;
  int rc = std::system(cmd.c_str());
  Output o;
  o.exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  o.out = testing::ReadFile(out);
  o.err = testing::ReadFile(err);
  return o;
}

json Parse(const Output& o) {
  json j = json::parse(o.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << "stdout is not JSON: " << o.out;
  return j;
}

// Static: no program interpreter and no NEEDED library, so the node's glibc version (RHEL 9,
// Ubuntu 22.04...) does not matter.
TEST(BinaryTest, IsStaticSoItRunsWhateverTheNodesGlibc) {
#ifdef RDMAK8S_SANITIZED
  GTEST_SKIP() << "sanitizer builds link libasan/libubsan and a shared libstdc++";
#endif
  auto lines = [](const std::string& cmd) {
    std::vector<std::string> out;
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return out;
    char line[512];
    while (fgets(line, sizeof line, p) != nullptr) out.emplace_back(line);
    pclose(p);
    return out;
  };
  auto headers = lines("readelf -lW " + kBinary);
  ASSERT_FALSE(headers.empty()) << "readelf -l " << kBinary << " printed nothing";
  for (const auto& l : headers) EXPECT_EQ(l.find("INTERP"), std::string::npos) << l;
  for (const auto& l : lines("readelf -dW " + kBinary)) {
    EXPECT_EQ(l.find("NEEDED"), std::string::npos) << kBinary << " needs a shared library: " << l;
  }
}

TEST(BinaryTest, VersionListsSupportedVersions) {
  auto o = RunBinary({{"CNI_COMMAND", "VERSION"}}, R"({"cniVersion":"0.4.0"})");
  EXPECT_EQ(o.exit_code, 0);
  json j = Parse(o);
  EXPECT_EQ(j["cniVersion"], "0.4.0");
  EXPECT_EQ(j["supportedVersions"], json({"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"}));
  EXPECT_EQ(Parse(RunBinary({{"CNI_COMMAND", "VERSION"}}, ""))["cniVersion"], "1.1.0");
}

// `rdmak8s --version` with stdin a pipe nobody writes to or closes (a terminal, as far as EOF
// goes): it must answer without reading stdin. The 30 s bound only keeps a hang from stalling the
// suite; a correct binary exits at once.
TEST(BinaryTest, VersionFlagAnswersWithoutReadingStdin) {
  int in[2], out[2];
  ASSERT_EQ(pipe2(in, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    execl(kBinary.c_str(), kBinary.c_str(), "--version", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);  // in[1] stays open: the binary never sees EOF on stdin
  std::string text;
  const auto guard = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool eof = false;
  while (!eof && std::chrono::steady_clock::now() < guard) {
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, 1000) <= 0) continue;
    char buf[4096];
    ssize_t n = read(out[0], buf, sizeof buf);
    if (n <= 0) {
      eof = true;
    } else {
      text.append(buf, static_cast<size_t>(n));
    }
  }
  int status = 0;
  if (!eof) kill(pid, SIGKILL);
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  close(in[1]);
  close(out[0]);
  ASSERT_TRUE(eof) << "rdmak8s --version did not exit within 30 s with stdin left open";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(text, std::string("rdmak8s CNI plugin ") + RDMAK8S_VERSION +
                      "\nCNI protocol versions supported: 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0\n");
}

TEST(BinaryTest, MissingCommandIsCode4OnStdoutAndLoggedOnStderr) {
  auto o = RunBinary({}, R"({"cniVersion":"1.0.0","name":"n","type":"rdmak8s"})");
  EXPECT_EQ(o.exit_code, 1);
  json j = Parse(o);
  EXPECT_EQ(j["code"], 4);
  EXPECT_EQ(j["cniVersion"], "1.0.0");
  EXPECT_NE(o.err.find("CNI_COMMAND"), std::string::npos);
}

TEST(BinaryTest, MissingEnvForAddIsCode4NamingTheVariable) {
  auto o = RunBinary({{"CNI_COMMAND", "ADD"}, {"CNI_CONTAINERID", "c1"}, {"CNI_IFNAME", "net1"}},
                     R"({"cniVersion":"1.0.0","name":"n","type":"rdmak8s"})");
  EXPECT_EQ(Parse(o)["code"], 4);
  EXPECT_NE(Parse(o)["msg"].get<std::string>().find("CNI_NETNS"), std::string::npos);
}

TEST(BinaryTest, BadContainerIdIsCode4) {
  auto o = RunBinary({{"CNI_COMMAND", "DEL"}, {"CNI_CONTAINERID", "../../x"}, {"CNI_IFNAME", "net1"}},
                     R"({"cniVersion":"1.0.0","name":"n","type":"rdmak8s"})");
  EXPECT_EQ(Parse(o)["code"], 4);
}

TEST(BinaryTest, MalformedStdinIsCode6) {
  auto o = RunBinary({{"CNI_COMMAND", "DEL"}, {"CNI_CONTAINERID", "c1"}, {"CNI_IFNAME", "net1"}}, "{nope");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_EQ(Parse(o)["code"], 6);
}

TEST(BinaryTest, UnsupportedVersionIsCode1) {
  auto o = RunBinary({{"CNI_COMMAND", "DEL"}, {"CNI_CONTAINERID", "c1"}, {"CNI_IFNAME", "net1"}},
                     R"({"cniVersion":"0.2.0","name":"n","type":"rdmak8s"})");
  EXPECT_EQ(Parse(o)["code"], 1);
}

TEST(BinaryTest, BadNetworkNameIsCode7) {
  auto o = RunBinary({{"CNI_COMMAND", "DEL"}, {"CNI_CONTAINERID", "c1"}, {"CNI_IFNAME", "net1"}},
                     R"({"cniVersion":"1.0.0","name":"../etc","type":"rdmak8s"})");
  EXPECT_EQ(Parse(o)["code"], 7);
}

TEST(BinaryTest, StatusIs50OnThisRdmaLessHost) {
  if (access("/sys/class/infiniband", F_OK) == 0) GTEST_SKIP() << "this host has RDMA";
  auto o = RunBinary({{"CNI_COMMAND", "STATUS"}, {"CNI_PATH", "/opt/cni/bin"}},
                     R"({"cniVersion":"1.1.0","name":"n","type":"rdmak8s"})");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_EQ(Parse(o)["code"], 50);
  EXPECT_NE(Parse(o)["msg"].get<std::string>().find("class/infiniband"), std::string::npos);
}

TEST(BinaryTest, DelOfAnUnknownAttachmentSucceedsWithEmptyStdout) {
  testing::TempDir t;
  ASSERT_TRUE(testing::WriteFile(t.path() + "/node.json", R"({"stateDir":")" + t.path() + R"(/state"})"));
  auto o = RunBinary({{"CNI_COMMAND", "DEL"}, {"CNI_CONTAINERID", "c1"}, {"CNI_IFNAME", "net1"},
                      {"CNI_PATH", "/opt/cni/bin"}, {"RDMAK8S_CNI_NODE_CONFIG", t.path() + "/node.json"}},
                     R"({"cniVersion":"1.0.0","name":"n","type":"rdmak8s"})");
  EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_TRUE(o.out.empty());
}

TEST(BinaryTest, TheNodeConfigurationIsTheFileTheRuntimesEnvironmentNames) {
  testing::TempDir t;
  const std::string node = t.path() + "/node.json";
  ASSERT_TRUE(testing::WriteFile(node, R"({"stateDir":")" + t.path() + R"(/state","logFiel":"/x"})"));
  auto o = RunBinary({{"CNI_COMMAND", "VERSION"}, {"RDMAK8S_CNI_NODE_CONFIG", node}}, R"({"cniVersion":"1.0.0"})");
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_EQ(Parse(o)["code"], 7);
  EXPECT_NE(Parse(o)["msg"].get<std::string>().find(node + ": $.logFiel: unknown field"), std::string::npos) << o.out;
  // A NAD cannot name a log file or a state dir, whatever it tries.
  const std::string victim = t.path() + "/victim";
  ASSERT_TRUE(testing::WriteFile(victim, "precious"));
  ASSERT_TRUE(testing::WriteFile(node, "{}"));
  o = RunBinary({{"CNI_COMMAND", "STATUS"}, {"CNI_PATH", "/opt/cni/bin"}, {"RDMAK8S_CNI_NODE_CONFIG", node}},
                R"({"cniVersion":"1.1.0","name":"n","type":"rdmak8s","logFile":")" + victim + R"("})");
  EXPECT_EQ(Parse(o)["code"], 7) << o.out;
  EXPECT_NE(Parse(o)["msg"].get<std::string>().find("\"logFile\""), std::string::npos) << o.out;
  EXPECT_EQ(testing::ReadFile(victim), "precious");
}

TEST(BinaryTest, ARelativeNodeConfigurationPathIsRefused) {
  testing::TempDir t;
  auto o = RunBinary({{"CNI_COMMAND", "STATUS"}, {"CNI_PATH", "/opt/cni/bin"}, {"RDMAK8S_CNI_NODE_CONFIG", "node.json"}},
                     R"({"cniVersion":"1.1.0","name":"n","type":"rdmak8s"})");
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_EQ(Parse(o)["code"], 7) << o.out;
  EXPECT_NE(Parse(o)["msg"].get<std::string>().find("\"node.json\" (RDMAK8S_CNI_NODE_CONFIG): must be an absolute path"),
            std::string::npos)
      << o.out;
}

TEST(BinaryTest, CheckOn031IsCode1) {
  auto o = RunBinary({{"CNI_COMMAND", "CHECK"}, {"CNI_CONTAINERID", "c1"}, {"CNI_IFNAME", "net1"},
                      {"CNI_NETNS", "/proc/self/ns/net"}},
                     R"({"cniVersion":"0.3.1","name":"n","type":"rdmak8s","prevResult":{}})");
  EXPECT_EQ(Parse(o)["code"], 1);
}

}  // namespace
}  // namespace rdmak8s::cni
