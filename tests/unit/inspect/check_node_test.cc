// The node-wide checks: RDMA netns mode against pools and netconfs, the container runtime's
// memlock limit, hugepages.
#include "check_node.h"

#include <fcntl.h>
#include <signal.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <filesystem>

#include <gtest/gtest.h>

#include "check_fixture.h"

namespace rdmak8s::inspect {
namespace {

using testing::CheckNode;
using testing::Find;
namespace fs = std::filesystem;

CheckPolicy PoolsPolicy(const std::string& config_json) {
  CheckPolicy p;
  auto cfg = dp::ParseConfig(config_json);
  EXPECT_TRUE(cfg.ok()) << cfg.status().ToString();
  p.plugin_config = *cfg;
  return p;
}

constexpr const char* kExclusivePool =
    R"({"pools":[{"name":"gpu-rdma","mode":"exclusive","selectors":{"transports":["roce"]}}]})";

TEST(NetnsModeCheckTest, ExclusivePoolOnASharedModeNodeFailsWithTheRdmaCommand) {
  CheckNode node("rxe_veth");
  auto i = Find(node.Run(PoolsPolicy(kExclusivePool)), "node", "rdma netns mode");
  EXPECT_EQ(i.outcome, Outcome::kFail);
  EXPECT_EQ(i.seen, "shared");
  EXPECT_EQ(i.want, "exclusive");
  EXPECT_NE(i.note.find("pool gpu-rdma"), std::string::npos);
  EXPECT_NE(i.fix.find("rdma system set netns exclusive"), std::string::npos);
  EXPECT_NE(i.fix.find("netns_mode=0"), std::string::npos);
}

TEST(NetnsModeCheckTest, ExclusivePoolOnAnExclusiveNodePasses) {
  CheckNode node("rxe_veth");
  node.world->mode = RdmaNetnsMode::kExclusive;
  EXPECT_EQ(Find(node.Run(PoolsPolicy(kExclusivePool)), "node", "rdma netns mode").outcome,
            Outcome::kPass);
}

TEST(NetnsModeCheckTest, NetconfAskingForSharedOnAnExclusiveNodeFails) {
  CheckNode node("rxe_veth");
  node.world->mode = RdmaNetnsMode::kExclusive;
  CheckPolicy p;
  auto nc = ParseQosArg(R"({"cniVersion":"1.0.0","name":"n","type":"rdmak8s","netnsMode":"shared"})");
  ASSERT_TRUE(nc.ok());
  p.netconfs.push_back(*nc);
  auto i = Find(node.Run(p), "node", "rdma netns mode");
  EXPECT_EQ(i.outcome, Outcome::kFail);
  EXPECT_NE(i.fix.find("rdma system set netns shared"), std::string::npos);
}

TEST(NetnsModeCheckTest, PoolsNeedingBothModesAreAPolicyError) {
  CheckNode node("rxe_veth");
  CheckPolicy p = PoolsPolicy(R"({"pools":[
      {"name":"a","mode":"exclusive","selectors":{}},{"name":"b","selectors":{"drivers":["rxe"]}}]})");
  CheckReport r = node.Run(p);
  bool conflict = false;
  for (const CheckItem& i : r.items()) {
    conflict |= i.check == "rdma netns mode" && i.outcome == Outcome::kFail &&
                i.want.find("pool a") != std::string::npos && i.want.find("pool b") != std::string::npos;
  }
  EXPECT_TRUE(conflict) << FormatReport(r);
}

TEST(NetnsModeCheckTest, WithoutPoolsTheModeIsShownNotJudged) {
  CheckNode node("rxe_veth");
  auto i = Find(node.Run(CheckPolicy{}), "node", "rdma netns mode");
  EXPECT_EQ(i.outcome, Outcome::kSkip);
  EXPECT_EQ(i.seen, "shared");
}

TEST(NetnsModeCheckTest, RdmaNetlinkErrorFailsNamingItWhenThePolicyNeedsAMode) {
  CheckNode node("rxe_veth");
  node.world->fail_get_mode = UnavailableError("rdma sys get: Connection refused");
  auto i = Find(node.Run(PoolsPolicy(kExclusivePool)), "node", "rdma netns mode");
  EXPECT_EQ(i.outcome, Outcome::kFail);
  EXPECT_NE(i.seen.find("Connection refused"), std::string::npos);
  node.world->fail_get_mode = UnavailableError("rdma sys get: Connection refused");
  EXPECT_EQ(Find(node.Run(CheckPolicy{}), "node", "rdma netns mode").outcome, Outcome::kSkip);
}

TEST(MemlockCheckTest, UnlimitedRuntimePasses) {
  CheckNode node("rxe_veth");
  auto i = Find(node.Run(CheckPolicy{}), "containerd (pid 100)", "memlock");
  EXPECT_EQ(i.outcome, Outcome::kPass);
  EXPECT_EQ(i.seen, "unlimited");
}

TEST(MemlockCheckTest, LimitedRuntimeFailsWithTheSystemdSetting) {
  CheckNode node("rxe_veth");
  node.AddRuntime(100, "containerd", "8388608");
  auto i = Find(node.Run(CheckPolicy{}), "containerd (pid 100)", "memlock");
  EXPECT_EQ(i.outcome, Outcome::kFail);
  EXPECT_EQ(i.seen, "8 MiB");
  EXPECT_NE(i.fix.find("LimitMEMLOCK=infinity"), std::string::npos);
  EXPECT_NE(i.fix.find("systemctl edit containerd"), std::string::npos);
}

TEST(MemlockCheckTest, AMinimumBelowTheLimitPasses) {
  CheckNode node("rxe_veth");
  node.AddRuntime(100, "containerd", "8388608");
  CheckPolicy p;
  p.memlock_min_bytes = 8 << 20;
  EXPECT_EQ(Find(node.Run(p), "containerd (pid 100)", "memlock").outcome, Outcome::kPass);
}

TEST(MemlockCheckTest, EveryRuntimeProcessNamedIsChecked) {
  CheckNode node("rxe_veth");
  node.AddRuntime(200, "crio", "65536");
  node.AddRuntime(300, "bash", "65536");
  CheckReport r = node.Run(CheckPolicy{});
  EXPECT_EQ(Find(r, "crio (pid 200)", "memlock").outcome, Outcome::kFail);
  for (const CheckItem& i : r.items()) EXPECT_EQ(i.subject.find("bash"), std::string::npos);
}

TEST(MemlockCheckTest, NoRuntimeFoundIsNotCheckedAndSaysWhere) {
  CheckNode node("rxe_veth");
  CheckPolicy p;
  p.runtimes = {"dockerd"};
  auto i = Find(node.Run(p), "node", "memlock");
  EXPECT_EQ(i.outcome, Outcome::kSkip);
  EXPECT_NE(i.seen.find("no dockerd process of root's in " + node.proc()), std::string::npos) << i.seen;
}

// Issue 24, item 9: any local user could fail the check (and rdmak8s_node_check_passed, and the
// lossless-ready label) with a process named containerd under `ulimit -l 64`.
TEST(MemlockCheckTest, AProcessNamedLikeTheRuntimeButNotRootsIsIgnored) {
  CheckNode node("rxe_veth");
  node.AddRuntime(4242, "containerd", "65536", /*uid=*/65534, "/usr/bin/containerd");
  CheckReport r = node.Run(CheckPolicy{});
  EXPECT_EQ(Find(r, "containerd (pid 100)", "memlock").outcome, Outcome::kPass);
  for (const CheckItem& i : r.items()) EXPECT_EQ(i.subject.find("4242"), std::string::npos) << FormatReport(r);
}

TEST(MemlockCheckTest, ARootProcessNamedLikeTheRuntimeRunningAnotherExecutableIsIgnored) {
  CheckNode node("rxe_veth");
  node.AddRuntime(4242, "containerd", "65536", /*uid=*/0, "/tmp/x/sleep");
  CheckReport r = node.Run(CheckPolicy{});
  for (const CheckItem& i : r.items()) EXPECT_EQ(i.subject.find("4242"), std::string::npos) << FormatReport(r);
}

TEST(MemlockCheckTest, OnlyImpostorsFoundIsNotCheckedAndNamesThem) {
  CheckNode node("rxe_veth");
  fs::remove_all(node.proc() + "/100");
  node.AddRuntime(4242, "containerd", "65536", /*uid=*/65534, "/tmp/x/containerd");
  node.AddRuntime(4243, "containerd", "65536", /*uid=*/0, "/tmp/x/sleep");
  auto i = Find(node.Run(CheckPolicy{}), "node", "memlock");
  EXPECT_EQ(i.outcome, Outcome::kSkip);
  EXPECT_NE(i.seen.find("4242 (uid 65534)"), std::string::npos) << i.seen;
  EXPECT_NE(i.seen.find("4243 (runs /tmp/x/sleep)"), std::string::npos) << i.seen;
}

TEST(MemlockCheckTest, TheRuntimeIsFoundByItsExecutableWhateverItsCommSays) {
  CheckNode node("rxe_veth");
  fs::remove_all(node.proc() + "/100");
  node.AddRuntime(300, "kubelet-renamed", "65536", 0, "/usr/local/bin/kubelet (deleted)");
  node.AddRuntime(301, "containerd", "65536", 0, "/opt/bin/containerd");
  CheckPolicy p;
  p.runtimes = {"kubelet", "/usr/bin/containerd"};
  CheckReport r = node.Run(p);
  auto i = Find(r, "kubelet (pid 300)", "memlock");
  EXPECT_EQ(i.outcome, Outcome::kFail) << FormatReport(r);
  EXPECT_EQ(i.seen, "64 KiB");
  for (const CheckItem& c : r.items()) EXPECT_EQ(c.subject.find("301"), std::string::npos) << FormatReport(r);
  p.runtimes = {"/opt/bin/containerd"};
  EXPECT_EQ(Find(node.Run(p), "containerd (pid 301)", "memlock").seen, "64 KiB");
}

TEST(MemlockCheckTest, RuntimeExecutablesAndUidsAreReadAsTheKernelWritesThem) {
  EXPECT_TRUE(IsRuntimeExecutable("/usr/bin/containerd", {"containerd"}));
  EXPECT_TRUE(IsRuntimeExecutable("/usr/bin/containerd (deleted)", {"containerd"}));
  EXPECT_FALSE(IsRuntimeExecutable("/usr/bin/containerd-shim-runc-v2", {"containerd"}));
  EXPECT_FALSE(IsRuntimeExecutable("containerd", {"containerd"})) << "not an absolute path";
  EXPECT_TRUE(IsRuntimeExecutable("/opt/bin/containerd", {"/opt/bin/containerd"}));
  EXPECT_FALSE(IsRuntimeExecutable("/usr/bin/containerd", {"/opt/bin/containerd"}));
  auto uids = ParseStatusUids("Name:\tcontainerd\nUid:\t65534\t0\t0\t0\nGid:\t0\t0\t0\t0\n");
  ASSERT_TRUE(uids.has_value());
  EXPECT_EQ(uids->real, 65534u);
  EXPECT_EQ(uids->effective, 0u);
  EXPECT_FALSE(ParseStatusUids("Name:\tx\n").has_value());
  EXPECT_FALSE(ParseStatusUids("Uid:\troot\t0\n").has_value());
}

// Found by a review: root in a container of its own (its own mount namespace) running its own
// /usr/bin/containerd under a 72 KiB memlock limit turned the node's memlock item red.
TEST(MemlockCheckTest, ARootProcessOfAnotherMountNamespaceRunningAnotherFileIsIgnored) {
  CheckNode node("rxe_veth");
  node.AddRuntime(100, "containerd", "73728");
  node.SetMountNamespace(100, "mnt:[4026532999]");
  auto i = Find(node.Run(CheckPolicy{}), "node", "memlock");
  EXPECT_EQ(i.outcome, Outcome::kSkip);
  EXPECT_NE(i.seen.find("100 (mount namespace mnt:[4026532999], not the host's, and /usr/bin/containerd "
                        "is not the host's file)"),
            std::string::npos)
      << i.seen;
}

TEST(MemlockCheckTest, WhenTheHostsMountNamespaceIsUnreadableNoRuntimeIsTrustedAndItSaysWhy) {
  CheckNode node("rxe_veth");
  fs::remove(node.proc() + "/1/ns/mnt");
  auto i = Find(node.Run(CheckPolicy{}), "node", "memlock");
  EXPECT_EQ(i.outcome, Outcome::kSkip);
  EXPECT_NE(i.seen.find("the host's mount namespace (" + node.proc() + "/1/ns/mnt) is unreadable"),
            std::string::npos)
      << i.seen;
}

// A real process running a copy of sleep named containerd in `dir`, with RLIMIT_MEMLOCK 64 KiB:
// as `uid`; in a mount namespace of its own (`own_mount_ns`), where `dir` is a tmpfs the host
// does not see, as a container's root file system is. Killed by the destructor.
class FakeRuntimeProcess {
 public:
  FakeRuntimeProcess(const std::string& dir, uid_t uid, bool own_mount_ns) {
    std::array<int, 2> ready{-1, -1};  // closed by the exec (O_CLOEXEC): the child is containerd
    EXPECT_EQ(pipe2(ready.data(), O_CLOEXEC), 0);
    const std::string exe = dir + "/containerd";
    if (!own_mount_ns) {
      fs::copy_file("/bin/sleep", exe);
      EXPECT_EQ(chmod(exe.c_str(), 0755), 0);
    }
    pid_ = fork();
    if (pid_ == 0) {
      if (own_mount_ns) {
        if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
            mount("tmpfs", dir.c_str(), "tmpfs", 0, nullptr) != 0) {
          _exit(12);
        }
        std::error_code ec;
        fs::copy_file("/bin/sleep", exe, ec);
        if (ec || chmod(exe.c_str(), 0755) != 0) _exit(13);
      }
      rlimit low{64 * 1024, 64 * 1024};
      if (setrlimit(RLIMIT_MEMLOCK, &low) != 0 || setgid(uid) != 0 || setuid(uid) != 0) _exit(10);
      execl(exe.c_str(), "containerd", "3600", static_cast<char*>(nullptr));
      _exit(11);
    }
    close(ready[1]);
    char byte = 0;
    EXPECT_EQ(read(ready[0], &byte, 1), 0) << "the child exec'd";
    close(ready[0]);
  }
  ~FakeRuntimeProcess() {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status)) << "the child ran until killed (exit " << WEXITSTATUS(status) << ")";
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// What CheckMemlock says of this machine's /proc, with this process standing for the host's
// init (whose mount namespace and root are the host's).
CheckReport CheckThisMachine() {
  CheckEnv env;
  env.proc_root = "/proc";
  env.host_pid = std::to_string(getpid());
  CheckPolicy policy;
  policy.runtimes = {"containerd"};
  CheckReport r;
  CheckMemlock(policy, env, r);
  return r;
}

// Runs a FakeRuntimeProcess(dir, uid, own_mount_ns) while this machine is checked, and expects
// it named among the processes not trusted, with `why` after its pid, and never checked.
void ExpectIgnored(const std::string& dir, uid_t uid, bool own_mount_ns, const std::string& why) {
  CheckReport r;
  pid_t pid = -1;
  {
    FakeRuntimeProcess runtime(dir, uid, own_mount_ns);
    pid = runtime.pid();
    r = CheckThisMachine();
  }
  const std::string p = "pid " + std::to_string(pid);
  for (const CheckItem& i : r.items()) {
    EXPECT_EQ(i.subject.find(p), std::string::npos) << FormatReport(r);
    if (i.subject == "node") {
      EXPECT_NE(i.seen.find(std::to_string(pid) + " (" + why), std::string::npos) << i.seen;
    }
  }
}

// The same for real: a process of nobody's named containerd, running an executable named
// containerd, with RLIMIT_MEMLOCK 64 KiB, in this machine's /proc.
TEST(MemlockCheckTest, ARealProcessOfNobodyNamedContainerdIsIgnored) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to start a process as nobody";
  rdmak8s::testing::TempDir tmp;
  ASSERT_EQ(chmod(tmp.path().c_str(), 0755), 0);
  ExpectIgnored(tmp.path(), 65534, false, "uid 65534)");
}

// And root in a container: its own mount namespace, its own containerd file.
TEST(MemlockCheckTest, ARealRootProcessInItsOwnMountNamespaceIsIgnored) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root for a mount namespace";
  rdmak8s::testing::TempDir tmp;
  ExpectIgnored(tmp.path(), 0, true, "mount namespace mnt:[");
}

// While root in the host's own mount namespace is the runtime, whatever its file's path.
TEST(MemlockCheckTest, ARealRootProcessOfTheHostsMountNamespaceIsChecked) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to lower a limit and read /proc/<pid>";
  rdmak8s::testing::TempDir tmp;
  CheckReport r;
  pid_t pid = -1;
  {
    FakeRuntimeProcess host(tmp.path(), 0, false);
    pid = host.pid();
    r = CheckThisMachine();
  }
  auto i = Find(r, "containerd (pid " + std::to_string(pid) + ")", "memlock");
  EXPECT_EQ(i.outcome, Outcome::kFail) << FormatReport(r);
  EXPECT_EQ(i.seen, "64 KiB");
}

TEST(MemlockCheckTest, SoftLimitIsReadFromTheLimitsLine) {
  auto v = ParseMemlockSoftLimit("Max locked memory         65536                unlimited            bytes\n");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(**v, 65536u);
  EXPECT_EQ(ParseMemlockSoftLimit("Max open files 1 1 files\n").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ParseMemlockSoftLimit("Max locked memory  lots  lots bytes\n").status().code(),
            StatusCode::kInvalidArgument);
}

TEST(HugepagesCheckTest, FewerPagesThanNeededFailWithTheSysfsWrite) {
  CheckNode node("rxe_veth");
  node.WriteFile(node.sys() + "/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "256\n");
  CheckPolicy p;
  p.hugepages = {{2048, 512}};
  auto i = Find(node.Run(p), "node", "hugepages 2048kB");
  EXPECT_EQ(i.outcome, Outcome::kFail);
  EXPECT_EQ(i.seen, "256");
  EXPECT_NE(i.fix.find("echo 512 > " + node.sys() + "/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"),
            std::string::npos);
  p.hugepages = {{2048, 256}};
  EXPECT_EQ(Find(node.Run(p), "node", "hugepages 2048kB").outcome, Outcome::kPass);
}

TEST(HugepagesCheckTest, ASizeTheKernelDoesNotHaveFails) {
  CheckNode node("rxe_veth");
  CheckPolicy p;
  p.hugepages = {{1048576, 4}};
  auto i = Find(node.Run(p), "node", "hugepages 1048576kB");
  EXPECT_EQ(i.outcome, Outcome::kFail);
  EXPECT_NE(i.fix.find("no 1048576kB hugepages"), std::string::npos);
}

TEST(HugepagesCheckTest, NoneAskedNoneChecked) {
  CheckNode node("rxe_veth");
  CheckReport r = node.Run(CheckPolicy{});
  for (const CheckItem& i : r.items()) {
    EXPECT_EQ(i.check.find("hugepages"), std::string::npos);
  }
}

}  // namespace
}  // namespace rdmak8s::inspect
