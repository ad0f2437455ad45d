#include "check_node.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <sstream>
#include <vector>

#include "rdmak8s/base/file_util.h"
#include "rdmak8s/base/numbers.h"
#include "rdmak8s/base/strings.h"

namespace rdmak8s::inspect {
namespace {

StatusOr<std::string> ReadSmallFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "open " + path);
  auto text = ReadFd(fd, path, 64 * 1024);
  close(fd);
  return text;
}

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

// The one number parser (rdmak8s/base/numbers.h), where a bad number only means "no value".
std::optional<uint64_t> ParseU64(std::string_view s) {
  StatusOr<uint64_t> v = ParseUnsigned<uint64_t>(s, "value");
  if (!v.ok()) return std::nullopt;
  return *v;
}

std::string Bytes(uint64_t b) {
  if (b >= (1ull << 30) && b % (1ull << 30) == 0) return std::to_string(b >> 30) + " GiB";
  if (b >= (1ull << 20) && b % (1ull << 20) == 0) return std::to_string(b >> 20) + " MiB";
  if (b >= 1024 && b % 1024 == 0) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " bytes";
}

}  // namespace

void CheckNetnsMode(const CheckPolicy& policy, const CheckEnv& env, CheckReport& report) {
  std::vector<std::string> exclusive, shared;
  if (policy.plugin_config) {
    for (const dp::PoolConfig& p : policy.plugin_config->pools) {
      (p.mode == dp::PoolMode::kExclusive ? exclusive : shared).push_back("pool " + p.name);
    }
  }
  for (const cni::NetConf& nc : policy.netconfs) {
    if (nc.netns_mode == "exclusive") exclusive.push_back("network " + nc.name);
    if (nc.netns_mode == "shared") shared.push_back("network " + nc.name);
  }
  std::string want = !exclusive.empty() ? "exclusive" : !shared.empty() ? "shared" : "";
  if (!exclusive.empty() && !shared.empty()) {
    report.Add({"node", "rdma netns mode", Outcome::kFail, "",
                "exclusive (" + Join(exclusive) + ") and shared (" + Join(shared) + ")",
                "one node has one mode: put the shared and the exclusive pools on different nodes",
                "the policy needs both modes"});
    want = "";
  }
  // Unreadable: a failure only when the policy needs an answer.
  const Outcome unreadable = want.empty() ? Outcome::kSkip : Outcome::kFail;
  if (env.rdma == nullptr) {
    report.Add({"node", "rdma netns mode", unreadable, env.rdma_error.ToString(), want, "", ""});
    return;
  }
  auto mode = env.rdma->GetNetnsMode();
  if (!mode.ok()) {
    report.Add({"node", "rdma netns mode", unreadable, mode.status().ToString(), want, "", ""});
    return;
  }
  CheckItem item{"node", "rdma netns mode", Outcome::kPass, std::string(RdmaNetnsModeName(*mode)),
                 want, "", ""};
  if (want.empty()) {
    item.outcome = Outcome::kSkip;
    item.note = "no pool or netconf names a mode (--config, --qos)";
  } else if (want != item.seen) {
    item.outcome = Outcome::kFail;
    item.note = "needed by " + Join(want == "exclusive" ? exclusive : shared);
    item.fix = "rdma system set netns " + want + " (only while no other netns exists: at boot, " +
               "options ib_core netns_mode=" + (want == "exclusive" ? "0" : "1") +
               " in /etc/modprobe.d/)";
  }
  report.Add(std::move(item));
}

StatusOr<std::optional<uint64_t>> ParseMemlockSoftLimit(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  const std::string key = "Max locked memory";
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    std::istringstream fields(line.substr(key.size()));
    std::string soft;
    fields >> soft;
    if (soft == "unlimited") return std::optional<uint64_t>();
    if (auto v = ParseU64(soft)) return std::optional<uint64_t>(*v);
    return InvalidArgumentError("\"" + line + "\": soft limit is not a number");
  }
  return NotFoundError("no \"Max locked memory\" line");
}

std::optional<ProcessUids> ParseStatusUids(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Uid:", 0) != 0) continue;
    std::istringstream fields(line.substr(4));
    std::string real, effective;
    fields >> real >> effective;
    auto r = ParseU64(real);
    auto e = ParseU64(effective);
    if (!r || !e) return std::nullopt;
    return ProcessUids{*r, *e};
  }
  return std::nullopt;
}

namespace {

// The kernel marks an executable replaced since the exec (a package upgrade while the daemon
// runs) " (deleted)"; it is still the one the process runs.
std::string_view WithoutDeleted(std::string_view exe) {
  constexpr std::string_view kDeleted = " (deleted)";
  if (exe.size() > kDeleted.size() && exe.substr(exe.size() - kDeleted.size()) == kDeleted) {
    exe.remove_suffix(kDeleted.size());
  }
  return exe;
}

}  // namespace

bool IsRuntimeExecutable(std::string_view exe, const std::vector<std::string>& runtimes) {
  exe = WithoutDeleted(exe);
  if (exe.empty() || exe.front() != '/') return false;
  for (const std::string& r : runtimes) {
    if (!r.empty() && r.front() == '/' ? exe == r : Basename(exe) == r) return true;
  }
  return false;
}

namespace {

// readlink(2) of a /proc/<pid> link: exe, the executable the process runs, which (unlike comm,
// which any process sets with prctl(PR_SET_NAME)) only an exec changes; ns/mnt, its mount
// namespace ("mnt:[4026531841]").
std::optional<std::string> ReadProcLink(const std::string& path) {
  std::string buf(4096, '\0');
  ssize_t n = readlink(path.c_str(), buf.data(), buf.size());
  if (n <= 0 || static_cast<size_t>(n) >= buf.size()) return std::nullopt;
  buf.resize(static_cast<size_t>(n));
  return buf;
}

// Why the process at <proc_root>/<pid> (`base`), running `exe`, is not the host's runtime, or
// "" when it is: it shares the mount namespace of the host's init (<proc_root>/<host_pid>), or
// its executable is the very file (device and inode) the host has at that path. Root in a
// container with its own /usr/bin/containerd is neither. A reference that cannot be read trusts
// nobody, and says so.
std::string NotTheHostsRuntime(const std::string& base, const std::string& exe, const CheckEnv& env) {
  const std::string host = env.proc_root + "/" + env.host_pid;
  std::optional<std::string> host_ns = ReadProcLink(host + "/ns/mnt");
  std::optional<std::string> ns = ReadProcLink(base + "/ns/mnt");
  if (host_ns && ns && *ns == *host_ns) return "";
  struct stat mine {};
  struct stat hosts {};
  if (stat((base + "/exe").c_str(), &mine) == 0 &&
      stat((host + "/root" + std::string(WithoutDeleted(exe))).c_str(), &hosts) == 0 &&
      mine.st_dev == hosts.st_dev && mine.st_ino == hosts.st_ino) {
    return "";
  }
  if (!host_ns) return "the host's mount namespace (" + host + "/ns/mnt) is unreadable";
  return "mount namespace " + (ns ? *ns : std::string("unreadable")) + ", not the host's, and " +
         exe + " is not the host's file";
}

}  // namespace

void CheckMemlock(const CheckPolicy& policy, const CheckEnv& env, CheckReport& report) {
  const std::string want =
      policy.memlock_min_bytes ? ">= " + Bytes(*policy.memlock_min_bytes) : "unlimited";
  DIR* dir = opendir(env.proc_root.c_str());
  if (dir == nullptr) {
    report.Add({"node", "memlock", Outcome::kFail,
                ErrnoError(errno, "opendir " + env.proc_root).ToString(), want, "", ""});
    return;
  }
  std::vector<std::string> pids;
  while (dirent* e = readdir(dir)) {
    if (ParseU64(e->d_name)) pids.push_back(e->d_name);
  }
  closedir(dir);
  bool found = false;
  std::vector<std::string> ignored;  // named like a runtime, but not one we trust
  for (const std::string& pid : pids) {
    const std::string base = env.proc_root + "/" + pid;
    // Any local user can start a process named "containerd" with a low limit: only a process of
    // root's running the runtime's executable speaks for the runtime.
    std::optional<std::string> exe = ReadProcLink(base + "/exe");
    if (!exe || !IsRuntimeExecutable(*exe, policy.runtimes)) {
      auto comm = ReadSmallFile(base + "/comm");
      if (comm.ok() && IsRuntimeExecutable("/" + Trim(*comm), policy.runtimes)) {
        ignored.push_back(pid + " (" + (exe ? "runs " + *exe : "executable unreadable") + ")");
      }
      continue;  // also: the process ended since readdir
    }
    auto status = ReadSmallFile(base + "/status");
    std::optional<ProcessUids> uids = status.ok() ? ParseStatusUids(*status) : std::nullopt;
    if (!uids || uids->real != 0 || uids->effective != 0) {
      ignored.push_back(pid + " (" + (uids ? "uid " + std::to_string(uids->real) : "no Uid line") + ")");
      continue;
    }
    // Root in a container of its own is root too: only the host's runtime speaks for the pods.
    if (std::string why = NotTheHostsRuntime(base, *exe, env); !why.empty()) {
      ignored.push_back(pid + " (" + why + ")");
      continue;
    }
    found = true;
    const std::string name = Basename(WithoutDeleted(*exe));
    const std::string subject = name + " (pid " + pid + ")";
    auto limits = ReadSmallFile(base + "/limits");
    if (!limits.ok()) {
      report.Add({subject, "memlock", Outcome::kFail, limits.status().ToString(), want, "", ""});
      continue;
    }
    auto soft = ParseMemlockSoftLimit(*limits);
    if (!soft.ok()) {
      report.Add({subject, "memlock", Outcome::kFail,
                  soft.status().Prepend(base + "/limits").ToString(), want, "", ""});
      continue;
    }
    CheckItem item{subject, "memlock", Outcome::kPass,
                   *soft ? Bytes(**soft) : "unlimited", want, "", "pods inherit the runtime's limit"};
    bool ok = !*soft || (policy.memlock_min_bytes && **soft >= *policy.memlock_min_bytes);
    if (!ok) {
      item.outcome = Outcome::kFail;
      item.fix = "LimitMEMLOCK=infinity in the " + name + " service (systemctl edit " + name +
                 "), then systemctl restart " + name;
    }
    report.Add(std::move(item));
  }
  if (!found) {
    std::string seen = "no " + Join(policy.runtimes, " or ") + " process of root's in " + env.proc_root;
    if (!ignored.empty()) seen += "; not trusted: pid " + Join(ignored);
    report.Add({"node", "memlock", Outcome::kSkip, seen, want, "",
                "name the runtime (or its executable's path) with --runtime, or give the host's "
                "/proc with --proc-root"});
  }
}

void CheckHugepages(const CheckPolicy& policy, const CheckEnv& env, CheckReport& report) {
  for (const HugepageNeed& h : policy.hugepages) {
    const std::string dir =
        env.sysfs_root + "/kernel/mm/hugepages/hugepages-" + std::to_string(h.size_kb) + "kB";
    const std::string check = "hugepages " + std::to_string(h.size_kb) + "kB";
    const std::string want = ">= " + std::to_string(h.count);
    auto text = ReadSmallFile(dir + "/nr_hugepages");
    if (!text.ok()) {
      bool missing = text.status().code() == StatusCode::kNotFound;
      report.Add({"node", check, Outcome::kFail, text.status().ToString(), want,
                  missing ? "this kernel or CPU has no " + std::to_string(h.size_kb) +
                                "kB hugepages: pick a size listed in " + env.sysfs_root +
                                "/kernel/mm/hugepages"
                          : "",
                  ""});
      continue;
    }
    auto n = ParseU64(Trim(*text));
    if (!n) {
      report.Add({"node", check, Outcome::kFail, "unreadable: " + Trim(*text), want, "", ""});
      continue;
    }
    CheckItem item{"node", check, *n >= h.count ? Outcome::kPass : Outcome::kFail,
                   std::to_string(*n), want, "", ""};
    if (item.outcome == Outcome::kFail) {
      item.fix = "echo " + std::to_string(h.count) + " > " + dir +
                 "/nr_hugepages (at boot: hugepagesz=/hugepages= on the kernel command line)";
    }
    report.Add(std::move(item));
  }
}

}  // namespace rdmak8s::inspect
