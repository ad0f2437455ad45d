// cni_exec_bench: one rxe attachment in exclusive mode, the rdmak8s CNI binary exec'ed per ADD
// and per DEL as a runtime does (issue 11 item 7: the e2e VM's side-by-side with rdma-cni has
// the same shape). The binary is bench/plugins/cni_exec_plugin: cni/main.cc's wiring with RDMA
// netlink and the pod's sysfs view stood in for (this machine has no RDMA; see that file), over
// an rxe-shaped sysfs tree whose port has the kernel's 1,024 GID slots, two of them populated with
// the pod interface's addresses. The pod is a real netns with a veth and an IP. The netconf
// names the device (deviceID), so every ADD resolves it, reads its port, moves it into the pod,
// waits for its GIDs and saves the record (fsync); every DEL loads it and moves the device home.
//
// Prints, never asserts: median/p99 wall of ADD and DEL, user and system CPU (wait4), peak RSS,
// and syscalls per ADD and per DEL (strace -f -c over a few runs, when strace is installed).
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_util.h"
#include "rdmak8s/device/device_lookup.h"
#include "rdmak8s/device/roce_gid.h"
#include "rdmak8s/netlink/route_netlink.h"
#include "support/exec_capture.h"
#include "support/test_dirs.h"
#include "support/throwaway_netns.h"

using namespace rdmak8s;
using nlohmann::json;

namespace {

constexpr int kGidSlots = 1024;  // rxe's GID table (RXE_PORT_GID_TBL_LEN)
const char* kStrace = "/usr/bin/strace";

using bench::Pct;
using bench::Sh;
using bench::Us;

bool Write(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  return static_cast<bool>(f);
}

struct Run {
  double wall_us = 0, user_us = 0, sys_us = 0;
  long maxrss_kb = 0;
  int exit_code = -1;
  std::string out;
};

// fork + execve(argv) with exactly `env`, `input` on stdin, stdout captured, stderr dropped
// (support/exec_capture.h), timed.
Run Exec(const std::vector<std::string>& argv, const std::vector<std::string>& env, const std::string& input) {
  auto t0 = std::chrono::steady_clock::now();
  testing::ExecResult e = testing::ExecCapture(argv, env, input);
  auto t1 = std::chrono::steady_clock::now();
  Run r;
  r.wall_us = std::chrono::duration<double, std::micro>(t1 - t0).count();
  r.user_us = Us(e.usage.ru_utime);
  r.sys_us = Us(e.usage.ru_stime);
  r.maxrss_kb = e.usage.ru_maxrss;
  r.exit_code = e.exit_code;
  r.out = std::move(e.out);
  return r;
}

// strace -c -w's summary: per syscall name (and "total"), calls and wall seconds spent in it.
struct SyscallFigures {
  long calls = 0;
  double seconds = 0;
};
std::map<std::string, SyscallFigures> StraceSummary(const std::string& path) {
  std::map<std::string, SyscallFigures> out;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream s(line);
    std::vector<std::string> t;
    for (std::string w; s >> w;) t.push_back(w);
    // "% time  seconds  usecs/call  calls  [errors]  syscall"
    if (t.size() < 5 || t[0].find('.') == std::string::npos) continue;
    out[t.back()] = {std::atol(t[3].c_str()), std::atof(t[1].c_str())};
  }
  return out;
}

// The pod's interface addresses, as the plugin reads them (rtnetlink in the pod).
StatusOr<std::vector<std::string>> PodAddresses(const Netns& pod, const std::string& ifname) {
  std::vector<std::string> out;
  Status s = RunInNetns(pod, [&]() -> Status {
    RDMAK8S_ASSIGN_OR_RETURN(auto rt, NewRouteNetlink());
    RDMAK8S_ASSIGN_OR_RETURN(auto link, rt->GetLinkByName(ifname));
    RDMAK8S_ASSIGN_OR_RETURN(auto addrs, rt->ListAddresses(link.ifindex));
    for (const auto& a : addrs) out.push_back(a.address);
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return out;
}

// world/node: the rxe_veth fixture with port 1's GID table made 1,024 slots long, the pod's
// addresses in the first ones (as roce_gid_mgmt fills the lowest free slots), the rest empty
// (the kernel prints the zero GID; gid_attrs of an empty slot answer EINVAL, left out here as in
// every fixture tree). world/pod: the pod's view, sharing devices/ (not netns tagged).
bool MakeWorld(const std::string& world, const std::vector<std::string>& addrs) {
  const std::string node = world + "/node";
  if (!Sh("cp -a " + RDMAK8S_FIXTURES_DIR + "/sysfs/rxe_veth " + node)) return false;
  const std::string port = node + "/devices/virtual/infiniband/rxe0/ports/1";
  if (!Sh("rm -rf " + port + "/gids " + port + "/gid_attrs && mkdir -p " + port + "/gids " + port +
          "/gid_attrs/types " + port + "/gid_attrs/ndevs")) {
    return false;
  }
  std::vector<std::string> gids;
  for (const auto& a : addrs) gids.push_back(GidForIp(a));
  std::sort(gids.begin(), gids.end());  // fe80:... (the default GID, index 0) before ::ffff:v4
  std::reverse(gids.begin(), gids.end());
  for (int i = 0; i < kGidSlots; ++i) {
    const std::string idx = std::to_string(i);
    if (i < static_cast<int>(gids.size())) {
      if (!Write(port + "/gids/" + idx, gids[static_cast<size_t>(i)] + "\n") ||
          !Write(port + "/gid_attrs/types/" + idx, "RoCE v2\n") ||
          !Write(port + "/gid_attrs/ndevs/" + idx, "net1\n")) {
        return false;
      }
    } else if (!Write(port + "/gids/" + idx, "0000:0000:0000:0000:0000:0000:0000:0000\n")) {
      return false;
    }
  }
  const std::string pod = world + "/pod";
  return Sh("mkdir -p " + pod + "/class/infiniband && ln -s ../node/devices " + pod + "/devices");
}

// The node configuration the plugin reads: the fixture as the node's sysfs, `state_dir`.
bool SetStateDir(const std::string& world, const std::string& state_dir) {
  return Write(world + "/node.json",
               "{\"sysfsRoot\":\"" + world + "/node\",\"stateDir\":\"" + state_dir + "\"}\n");
}

std::string KeyOfPath(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st {};
  std::string k = fstat(fd, &st) == 0 ? std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) : "";
  close(fd);
  return k;
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 270;  // ADD/DEL pairs
  const int traced = 5;                                // pairs run under strace -f -c
  const std::string bin = RDMAK8S_CNI_EXEC_PLUGIN;
  char tmpl[] = "/tmp/rdmak8s-cni-exec-bench-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 1;
  const std::string world = tmpl;
  auto cleanup = [&] { std::system(("rm -rf " + world).c_str()); };

  auto pod = testing::NewThrowawayNetns();
  if (!pod.ok()) {
    std::fprintf(stderr, "cni_exec_bench: %s\n", pod.status().ToString().c_str());
    cleanup();
    return 1;
  }
  const std::string ip = "10.1.0.2";
  if (!testing::ShIn(*pod, "ip link add net1 type veth peer name peer0 && ip addr add " + ip +
                               "/16 dev net1 && ip link set peer0 up && ip link set net1 up").ok()) {
    std::fprintf(stderr, "cni_exec_bench: cannot create the pod interface\n");
    cleanup();
    return 1;
  }
  auto addrs = PodAddresses(*pod, "net1");
  if (!addrs.ok() || !MakeWorld(world, *addrs) ||
      !Write(world + "/node_netns", KeyOfPath("/proc/self/ns/net") + "\n") ||
      !Write(world + "/rdma_netns", KeyOfPath("/proc/self/ns/net") + "\n")) {
    std::fprintf(stderr, "cni_exec_bench: cannot build the world in %s\n", world.c_str());
    cleanup();
    return 1;
  }
  const json conf = {{"cniVersion", "1.1.0"}, {"name", "bench"}, {"type", "rdmak8s"}, {"deviceID", "rxe0"},
                     {"prevResult", {{"cniVersion", "1.1.0"},
                                     {"interfaces", {{{"name", "net1"}, {"sandbox", pod->path()}}}},
                                     {"ips", {{{"address", ip + "/16"}, {"interface", 0}}}}}}};
  const std::string input = conf.dump();
  auto env_of = [&](const char* cmd, int i) {
    return std::vector<std::string>{std::string("CNI_COMMAND=") + cmd, "CNI_CONTAINERID=bench" + std::to_string(i),
                                    "CNI_NETNS=" + pod->path(), "CNI_IFNAME=net1", "CNI_PATH=/opt/cni/bin"};
  };

  // The state store fsyncs every record: on disk that is most of an ADD; on tmpfs (where the
  // e2e VM's initramfs keeps it) it is free, and what is left is the plugin's own.
  char shm[] = "/dev/shm/rdmak8s-cni-exec-bench-XXXXXX";
  if (mkdtemp(shm) == nullptr) {
    cleanup();
    return 1;
  }
  const std::string tmpfs_state = std::string(shm) + "/state";
  auto cleanup_all = [&] {
    cleanup();
    std::system((std::string("rm -rf ") + shm).c_str());
  };
  std::printf("rdmak8s CNI binary exec'ed per command, %d ADD/DEL pairs: one rxe device (1,024 GID slots,\n"
              "  fixture sysfs), exclusive mode, deviceID, pod = real netns + veth with an IP:\n", n);
  int serial = 0;
  struct Variant {
    std::string label, state_dir;
    std::vector<std::string> extra_args;
  };
  for (const auto& [label, state, extra] : std::vector<Variant>{
           {"state dir on disk (fsync)", world + "/state", {}},
           {"state dir on tmpfs", tmpfs_state, {}},
           {"state dir on tmpfs, pod's sysfs view by mount(2) as before Linux 5.2", tmpfs_state, {"mount2"}}}) {
    std::vector<std::string> argv_run = {bin, world};
    argv_run.insert(argv_run.end(), extra.begin(), extra.end());
    if (!SetStateDir(world, state)) {
      cleanup_all();
      return 1;
    }
    std::map<std::string, std::vector<Run>> runs;
    for (int i = 0; i < n; ++i, ++serial) {
      for (const char* cmd : {"ADD", "DEL"}) {
        Run r = Exec(argv_run, env_of(cmd, serial), input);
        if (r.exit_code != 0) {
          std::fprintf(stderr, "cni_exec_bench: %s #%d exited %d: %s\n", cmd, i, r.exit_code, r.out.c_str());
          cleanup_all();
          return 1;
        }
        runs[cmd].push_back(r);
      }
    }
    std::printf(" %s:\n", label.c_str());
    double add_med = 0, del_med = 0;
    for (const char* cmd : {"ADD", "DEL"}) {
      std::vector<double> wall, user, sys, cpu;
      long rss = 0;
      for (const auto& r : runs[cmd]) {
        wall.push_back(r.wall_us);
        user.push_back(r.user_us);
        sys.push_back(r.sys_us);
        cpu.push_back(r.user_us + r.sys_us);
        rss = std::max(rss, r.maxrss_kb);
      }
      (cmd[0] == 'A' ? add_med : del_med) = Pct(wall, 0.5);
      std::printf("  %s wall median %7.0f us  p99 %7.0f us   cpu median %6.0f us (user %6.0f, sys %6.0f)   peak RSS %5ld KiB\n",
                  cmd, Pct(wall, 0.5), Pct(wall, 0.99), Pct(cpu, 0.5), Pct(user, 0.5), Pct(sys, 0.5), rss);
    }
    std::printf("  ADD+DEL wall median %7.0f us   (user/sys: wait4's split, tick-sampled; their sum is exact)\n",
                add_med + del_med);
  }

  if (access(kStrace, X_OK) != 0) {
    std::printf("  syscalls: %s not installed (scripts/install-deps.sh installs it)\n", kStrace);
    cleanup_all();
    return 0;
  }
  std::map<std::string, std::map<std::string, SyscallFigures>> sum;
  for (int i = 0; i < traced; ++i) {
    for (const char* cmd : {"ADD", "DEL"}) {
      const std::string out = world + "/strace." + cmd;
      Run r = Exec({kStrace, "-f", "-c", "-w", "-o", out, bin, world}, env_of(cmd, serial + i), input);
      if (r.exit_code != 0) {
        std::fprintf(stderr, "cni_exec_bench: traced %s exited %d: %s\n", cmd, r.exit_code, r.out.c_str());
        cleanup_all();
        return 1;
      }
      for (const auto& [name, fig] : StraceSummary(out)) {
        sum[cmd][name].calls += fig.calls;
        sum[cmd][name].seconds += fig.seconds;
      }
    }
  }
  for (const char* cmd : {"ADD", "DEL"}) {
    auto& c = sum[cmd];
    std::printf("  syscalls per %s (state on tmpfs; strace -f -c -w, mean of %d): %ld total, %ld openat, %ld read,\n"
                "    %ld fsmount, %ld mount\n",
                cmd, traced, c["total"].calls / traced, c["openat"].calls / traced, c["read"].calls / traced,
                c["fsmount"].calls / traced, c["mount"].calls / traced);
    std::vector<std::pair<double, std::string>> by_time;
    for (const auto& [name, fig] : c) {
      if (name != "total") by_time.push_back({fig.seconds, name});
    }
    std::sort(by_time.rbegin(), by_time.rend());
    std::printf("    most wall time inside (traced, so inflated):");
    for (size_t k = 0; k < std::min<size_t>(4, by_time.size()); ++k) {
      std::printf(" %s %.1f ms%s", by_time[k].second.c_str(), by_time[k].first * 1e3 / traced,
                  k + 1 < std::min<size_t>(4, by_time.size()) ? "," : "\n");
    }
  }
  cleanup_all();
  return 0;
}
