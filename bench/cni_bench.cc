// cni_bench: what one attachment costs the rdmak8s CNI plugin (issue 4, Performance).
//
// 1. The library, in-process, over 200 attachments: each pod gets a real netns with a macvlan of
//    the node's netdev (the netdev plugin's work, not timed), then ADD+DEL of rdmak8s is timed:
//    device resolution through the macvlan, QoS (PFC + DSCP map on fake DCB), GID check on a
//    kernel-shaped sysfs copy, state store with fsync. RDMA/DCB netlink are in-memory fakes (this
//    machine has no RDMA): the figures are our plugin's share, not the driver's. Wall time per
//    ADD+DEL, and the kernel's (system) time of the thread apart.
// 2. The binary, exec'ed as a runtime would: wall time and peak RSS (wait4 ru_maxrss) of the
//    commands that run to completion on an RDMA-less host (VERSION, STATUS, DEL, ADD failing).
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_util.h"
#include "cni/plugin.h"
#include "fakes/fake_dcb_netlink.h"
#include "fakes/fake_rdma_netlink.h"
#include "rdmak8s/device/device_lookup.h"
#include "rdmak8s/device/roce_gid.h"
#include "support/test_dirs.h"
#include "support/throwaway_netns.h"

using namespace rdmak8s;
using namespace rdmak8s::cni;
using nlohmann::json;

namespace {

using bench::Pct;
using bench::Sh;
using bench::Us;

int RunLibrary(int n, const std::string& tmp, const std::string& state, const char* label) {
  auto node = testing::NewThrowawayNetns();
  if (!node.ok()) {
    std::fprintf(stderr, "cni_bench: %s\n", node.status().ToString().c_str());
    return 1;
  }
  const std::string sysfs = tmp + "/sys";
  if (!Sh("cp -a " + RDMAK8S_FIXTURES_DIR + "/sysfs/mlx5_roce_sriov " + sysfs) || !Sh("mkdir -p " + tmp + "/config")) {
    std::fprintf(stderr, "cni_bench: cannot copy the fixture tree\n");
    return 1;
  }
  if (!testing::ShIn(*node, "ip link add ens1f0np0 type veth peer name ensx && ip link set ens1f0np0 up").ok()) {
    std::fprintf(stderr, "cni_bench: cannot create the node netdev\n");
    return 1;
  }
  auto world = std::make_shared<FakeRdmaNetlink::World>();
  world->mode = RdmaNetnsMode::kShared;
  FakeRdmaNetlink(world, FakeRdmaNetlink::NetnsKey(node->fd())).AddDevice("mlx5_0");
  FakeDcbNetlink dcb;
  dcb.AddNetdev("ens1f0np0");
  PluginOptions o;
  o.node_config_path = "";
  o.node.sysfs_root = sysfs;
  o.node.configfs_root = tmp + "/config";
  o.node.state_dir = state;
  o.stderr_fd = -1;
  o.new_rdma_netlink = [world]() -> StatusOr<std::unique_ptr<RdmaNetlink>> {
    auto cur = CurrentNetns();
    if (!cur.ok()) return cur.status();
    return std::unique_ptr<RdmaNetlink>(new FakeRdmaNetlink(world, FakeRdmaNetlink::NetnsKey(cur->fd())));
  };
  o.new_dcb_netlink = [&dcb]() -> StatusOr<std::unique_ptr<DcbNetlink>> {
    return std::unique_ptr<DcbNetlink>(new SharedDcb(&dcb));
  };
  o.new_route_netlink = [] { return NewRouteNetlink(); };

  std::vector<double> wall, sys, cpu;
  for (int i = 0; i < n; ++i) {
    auto pod = testing::NewThrowawayNetns();
    if (!pod.ok()) return 1;
    const std::string ip = "10." + std::to_string(100 + i / 250) + "." + std::to_string(i % 250) + ".2";
    const std::string mv = "mv" + std::to_string(i);
    Status s = testing::ShIn(*node, "ip link add " + mv + " link ens1f0np0 type macvlan mode bridge && ip link set " +
                                        mv + " netns " + pod->path() + " name net1");
    s = s.ok() ? testing::ShIn(*pod, "(sysctl -w net.ipv6.conf.net1.disable_ipv6=1 && ip addr add " + ip +
                                         "/16 dev net1 && ip link set net1 up)")
               : s;
    if (!s.ok()) {
      std::fprintf(stderr, "cni_bench: pod setup: %s\n", s.ToString().c_str());
      return 1;
    }
    const std::string gdir = sysfs + "/class/infiniband/mlx5_0/ports/1/";
    std::ofstream(gdir + "gids/" + std::to_string(100 + i)) << GidForIp(ip) << "\n";
    std::ofstream(gdir + "gid_attrs/types/" + std::to_string(100 + i)) << "RoCE v2\n";
    json conf = {{"cniVersion", "1.1.0"}, {"name", "bench"}, {"type", "rdmak8s"},
                 {"qos", {{"pfc", {3}}, {"dscpToPriority", {{"26", 3}}}, {"trust", "dscp"}}},
                 {"prevResult", {{"cniVersion", "1.1.0"},
                                 {"interfaces", {{{"name", "net1"}, {"sandbox", pod->path()}}}},
                                 {"ips", {{{"address", ip + "/16"}, {"interface", 0}}}}}}};
    const std::string stdin_data = conf.dump();
    const std::string cid = "bench" + std::to_string(i);
    int failures = 0;
    rusage r0{}, r1{};
    timespec c0{}, c1{};
    auto t0 = std::chrono::steady_clock::now();
    (void)RunInNetns(*node, [&]() -> Status {
      getrusage(RUSAGE_THREAD, &r0);
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
      for (const char* cmd : {"ADD", "DEL"}) {
        std::map<std::string, std::string> env = {{"CNI_COMMAND", cmd}, {"CNI_CONTAINERID", cid},
                                                  {"CNI_IFNAME", "net1"}, {"CNI_NETNS", pod->path()},
                                                  {"CNI_PATH", "/opt/cni/bin"}};
        auto out = RunPlugin(o, [&](const char* k) -> const char* {
          auto it = env.find(k);
          return it == env.end() ? nullptr : it->second.c_str();
        }, stdin_data);
        if (out.exit_code != 0) {
          std::fprintf(stderr, "cni_bench: %s failed: %s\n", cmd, out.stdout_data.c_str());
          ++failures;
        }
      }
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
      getrusage(RUSAGE_THREAD, &r1);
      return Status::Ok();
    });
    auto t1 = std::chrono::steady_clock::now();
    if (failures) return 1;
    wall.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    sys.push_back(Us(r1.ru_stime) - Us(r0.ru_stime));
    cpu.push_back(static_cast<double>(c1.tv_sec - c0.tv_sec) * 1e6 +
                  static_cast<double>(c1.tv_nsec - c0.tv_nsec) / 1e3);
  }
  std::printf("library ADD+DEL over %d attachments (macvlan pod, shared mode, 3 QoS knobs, GID check),\n"
              "  state dir %s:\n", n, label);
  std::printf("  wall    median %8.0f us   p99 %8.0f us\n", Pct(wall, 0.5), Pct(wall, 0.99));
  std::printf("  kernel  median %8.0f us   p99 %8.0f us   (system time of the thread, getrusage)\n", Pct(sys, 0.5), Pct(sys, 0.99));
  std::printf("  cpu     median %8.0f us   p99 %8.0f us   (user+system, CLOCK_THREAD_CPUTIME_ID)\n",
              Pct(cpu, 0.5), Pct(cpu, 0.99));
  return 0;
}

struct ExecResult {
  double wall_us = 0;
  long maxrss_kb = 0;
  int exit_code = -1;
};

ExecResult Exec(const std::string& bin, const std::vector<std::string>& env, const std::string& input) {
  int in[2];
  if (pipe(in) != 0) return {};
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    close(in[1]);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    std::vector<char*> envp;
    for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    char* argv[] = {const_cast<char*>(bin.c_str()), nullptr};
    execve(bin.c_str(), argv, envp.data());
    _exit(127);
  }
  close(in[0]);
  (void)!write(in[1], input.data(), input.size());
  close(in[1]);
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  auto t1 = std::chrono::steady_clock::now();
  return {std::chrono::duration<double, std::micro>(t1 - t0).count(), ru.ru_maxrss,
          WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

int RunBinary(int n, const std::string& tmp) {
  const std::string bin = RDMAK8S_CNI_BINARY;
  if (access(bin.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "cni_bench: %s not built\n", bin.c_str());
    return 1;
  }
  // The state dir is the node's: the node configuration the runtime's environment names.
  const std::string node = tmp + "/node.json";
  if (FILE* f = std::fopen(node.c_str(), "w")) {
    std::fprintf(f, "{\"stateDir\":\"%s/bstate\"}\n", tmp.c_str());
    std::fclose(f);
  }
  const std::string node_env = "RDMAK8S_CNI_NODE_CONFIG=" + node;
  const std::string conf =
      R"({"cniVersion":"1.1.0","name":"bench","type":"rdmak8s","prevResult":{"cniVersion":"1.1.0","interfaces":[],"ips":[]}})";
  struct Case { const char* name; std::vector<std::string> env; };
  const std::string ns = "/proc/self/ns/net";
  std::vector<Case> cases = {
      {"VERSION", {"CNI_COMMAND=VERSION"}},
      {"STATUS", {"CNI_COMMAND=STATUS", "CNI_PATH=/opt/cni/bin"}},
      {"DEL", {"CNI_COMMAND=DEL", "CNI_CONTAINERID=c1", "CNI_IFNAME=net1", "CNI_PATH=/opt/cni/bin"}},
      {"ADD (fails: no RDMA here)", {"CNI_COMMAND=ADD", "CNI_CONTAINERID=c1", "CNI_IFNAME=net1",
                                     "CNI_NETNS=" + ns, "CNI_PATH=/opt/cni/bin"}},
  };
  std::printf("binary %s, %d runs per command:\n", bin.c_str(), n);
  for (const auto& c : cases) {
    std::vector<double> wall;
    long rss = 0;
    for (int i = 0; i < n; ++i) {
      std::vector<std::string> env = c.env;
      env.push_back(node_env);
      ExecResult r = Exec(bin, env, conf);
      wall.push_back(r.wall_us);
      rss = std::max(rss, r.maxrss_kb);
    }
    std::printf("  %-28s wall median %6.0f us  p99 %6.0f us  peak RSS %5ld KiB\n", c.name, Pct(wall, 0.5),
                Pct(wall, 0.99), rss);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 200;  // attachments / runs
  char tmpl[] = "/tmp/rdmak8s-cni-bench-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 1;
  const std::string tmp = tmpl;
  // The state store fsyncs every write: show the disk's share apart from the plugin's own.
  int rc = RunLibrary(n, tmp, tmp + "/state", "on disk (fsync)");
  if (rc == 0) {
    char shm[] = "/dev/shm/rdmak8s-cni-bench-XXXXXX";
    if (mkdtemp(shm) == nullptr) return 1;
    const std::string tmp2 = tmp + "/second";
    std::system(("mkdir -p " + tmp2).c_str());
    rc = RunLibrary(n, tmp2, std::string(shm) + "/state", "on tmpfs (fsync is free)");
    std::system((std::string("rm -rf ") + shm).c_str());
  }
  if (rc == 0) rc = RunBinary(n, tmp);
  std::system(("rm -rf " + tmp).c_str());
  return rc;
}
