// rdmak8s-fake-kubelet: a kubelet stand-in for the e2e suite and for poking a plugin by hand.
// See --help. Exit status: 0 when every wait and RPC succeeded, 1 otherwise, 2 on bad usage.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <cerrno>
#include <chrono>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "support/fake_kubelet.h"
#include "support/fake_pod_resources.h"

namespace {

using nlohmann::json;
using rdmak8s::fake::FakeKubelet;
using rdmak8s::fake::FakePodResources;

// The parts of `s` between `sep`s, empty ones too: "a,,b" -> {a, "", b}.
std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  for (size_t pos = 0;;) {
    const size_t at = s.find(sep, pos);
    parts.push_back(s.substr(pos, at == std::string::npos ? std::string::npos : at - pos));
    if (at == std::string::npos) return parts;
    pos = at + 1;
  }
}

// "NS/NAME[/UID[/CONTAINER]]": the pod (and container, "main" by default) an allocation is for.
bool ParsePod(const std::string& s, FakePodResources::Pod* pod, std::string* container) {
  const std::vector<std::string> parts = Split(s, '/');
  if (parts.size() < 2 || parts.size() > 4 || parts[0].empty() || parts[1].empty()) return false;
  pod->pod_namespace = parts[0];
  pod->name = parts[1];
  pod->uid = parts.size() > 2 ? parts[2] : "";
  *container = parts.size() > 3 && !parts[3].empty() ? parts[3] : "main";
  return true;
}

// "A,B,C" -> {A, B, C} (empty parts dropped).
std::vector<std::string> SplitIds(const std::string& rest) {
  std::vector<std::string> ids = Split(rest, ',');
  std::erase(ids, std::string());
  return ids;
}

json DevicesJson(const v1beta1::ListAndWatchResponse& r) {
  json out = json::array();
  for (const auto& d : r.devices()) {
    json numa = json::array();
    if (d.has_topology()) {
      for (const auto& n : d.topology().nodes()) numa.push_back(n.id());
    }
    out.push_back({{"id", d.id()}, {"health", d.health()}, {"numa", numa}});
  }
  return out;
}

json AllocateJson(const v1beta1::AllocateResponse& r) {
  json containers = json::array();
  for (const auto& c : r.container_responses()) {
    json envs = json::object();
    for (const auto& [k, v] : c.envs()) envs[k] = v;
    json annotations = json::object();
    for (const auto& [k, v] : c.annotations()) annotations[k] = v;
    json devices = json::array();
    for (const auto& d : c.devices()) {
      devices.push_back({{"container_path", d.container_path()},
                         {"host_path", d.host_path()},
                         {"permissions", d.permissions()}});
    }
    json mounts = json::array();
    for (const auto& m : c.mounts()) {
      mounts.push_back({{"container_path", m.container_path()},
                        {"host_path", m.host_path()},
                        {"read_only", m.read_only()}});
    }
    json cdi = json::array();
    for (const auto& d : c.cdi_devices()) cdi.push_back(d.name());
    containers.push_back({{"envs", envs}, {"devices", devices}, {"mounts", mounts},
                          {"annotations", annotations}, {"cdi_devices", cdi}});
  }
  return containers;
}

// Everything the fake kubelet prints on stdout is one line per document, written whole by one
// write(2) (looping only on a short write) under a mutex: ListAndWatch updates arrive on one
// thread per stream while the main thread prints its document, and the e2e harness
// (e2e/guest/lib.sh) reads the file while it grows, one complete line at a time. No stdio buffer
// sits in between to be flushed, or not, when the process is killed.
class LineWriter {
 public:
  void Write(std::string line) {
    line.push_back('\n');
    std::lock_guard<std::mutex> lock(mu_);
    const char* p = line.data();
    size_t left = line.size();
    while (left > 0) {
      ssize_t n = write(STDOUT_FILENO, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // a closed pipe or a full disk: nobody reads us any more
      p += n;
      left -= static_cast<size_t>(n);
    }
  }

 private:
  std::mutex mu_;
};

// One line of JSON; bytes that are not UTF-8 (an ID from a plugin is untrusted) are replaced
// rather than thrown on.
std::string OneLine(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void Fail(json& out, bool as_json, const std::string& msg) {
  out["errors"].push_back(msg);
  if (!as_json) std::cerr << "rdmak8s-fake-kubelet: " << msg << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "rdmak8s-fake-kubelet: serves the kubelet device plugin Registration API (v1beta1) on "
      "<dir>/kubelet.sock, dials back each plugin that registers, keeps its ListAndWatch "
      "stream, and optionally allocates.\n\n"
      "Examples:\n"
      "  rdmak8s-fake-kubelet --dir /var/lib/kubelet/device-plugins --wait-resource rdma/ib "
      "--allocate rdma/ib:2 --json\n"
      "  rdmak8s-fake-kubelet --dir D --watch            # one JSON line per ListAndWatch update\n"
      "  rdmak8s-fake-kubelet --dir D --plugin-watcher /var/lib/kubelet/plugins_registry/x.sock\n\n"
      "With --pod-resources it also serves kubelet's pod-resources API (v1 List, Get, "
      "GetAllocatableResources) there, answering which device IDs each pod holds from the "
      "--allocate's pods (RESOURCE:N@NS/NAME) and --pod-device's.\n\n"
      "Output: one line per document (with --json, one JSON object per line), each written whole "
      "by one write(2), so a reader of a growing file sees complete lines."};
  std::string dir;
  std::vector<std::string> wait_resources;
  std::vector<std::string> allocations;
  std::vector<std::string> plugin_watcher_sockets;
  double timeout_s = 30;
  bool as_json = false;
  bool watch = false;
  bool restart = false;
  bool one_container = false;
  int dial_back_delay_ms = 0;
  int reply_delay_ms = 0;
  int stream_delay_ms = 0;
  app.add_option("--dir", dir, "kubelet device-plugins directory (kubelet.sock is created here)")
      ->required();
  app.add_option("--wait-resource", wait_resources,
                 "wait until this resource registered and sent its first device list "
                 "(repeatable)");
  app.add_option("--allocate", allocations,
                 "RESOURCE:N allocates N healthy devices (asking GetPreferredAllocation first when "
                 "the plugin offers it); RESOURCE=ID1,ID2 allocates those IDs (repeatable; implies "
                 "--wait-resource). Each first waits, up to --timeout, for a ListAndWatch update "
                 "with N healthy devices (or every named ID healthy). A suffix "
                 "@NS/NAME[/UID[/CONTAINER]] says which pod's container (default main) the "
                 "allocation is for: the pod-resources API lists its IDs for that pod");
  std::string pod_resources_socket;
  std::vector<std::string> pod_devices;
  app.add_option("--pod-resources", pod_resources_socket,
                 "also serve kubelet's pod-resources API (v1) on this socket (its directory is "
                 "made), as kubelet does on /var/lib/kubelet/pod-resources/kubelet.sock");
  app.add_option("--pod-device", pod_devices,
                 "NS/NAME[/UID[/CONTAINER]]=RESOURCE=ID1,ID2: the pod-resources API lists these "
                 "IDs for that pod's container (default main) without an Allocate, as kubelet "
                 "does for a pod admitted before it restarted (its checkpoint) (repeatable)");
  app.add_option("--plugin-watcher", plugin_watcher_sockets,
                 "register through the plugin-watcher API: call GetInfo and "
                 "NotifyRegistrationStatus on this socket (repeatable)");
  app.add_option("--timeout", timeout_s, "seconds to wait for each registration (default 30)");
  app.add_flag("--restart", restart,
               "before serving, delete every socket in --dir as a restarting kubelet does");
  app.add_flag("--one-container", one_container,
               "the --allocate answers are one container's: print its env merged as kubelet does "
               "(a key set twice keeps the first value; each conflict listed and logged)");
  app.add_option("--dial-back-delay-ms", dial_back_delay_ms,
                 "answer as a loaded kubelet: wait this long in each Register before dialling the "
                 "plugin back")
      ->check(CLI::Range(0, 600000));
  app.add_option("--reply-delay-ms", reply_delay_ms,
                 "wait this long after the dial-back before answering each Register")
      ->check(CLI::Range(0, 600000));
  app.add_option("--stream-delay-ms", stream_delay_ms,
                 "wait this long before opening each ListAndWatch stream")
      ->check(CLI::Range(0, 600000));
  app.add_flag("--json", as_json, "print one JSON document (one line) with registrations, "
                                  "devices and allocations");
  app.add_flag("--watch", watch, "keep running until SIGINT/SIGTERM, printing each ListAndWatch "
                                 "update as a JSON line {\"resource\",\"devices\"}");
  CLI11_PARSE(app, argc, argv);

  // SIGINT/SIGTERM are blocked here, before any gRPC thread exists (threads inherit the mask), and
  // taken with sigwait() at the end: a handler plus pause() misses a signal that lands on another
  // thread or just before pause(), and the process then lives on after `kill`.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  LineWriter out_lines;
  FakeKubelet kubelet(dir);
  kubelet.SetRegisterDelays(std::chrono::milliseconds(dial_back_delay_ms), std::chrono::milliseconds(reply_delay_ms),
                            std::chrono::milliseconds(stream_delay_ms));
  if (watch) {
    kubelet.SetUpdateCallback(
        [&out_lines](const std::string& res, const v1beta1::ListAndWatchResponse& r) {
          out_lines.Write(OneLine({{"resource", res}, {"devices", DevicesJson(r)}}));
        });
  }
  rdmak8s::Status st = restart ? kubelet.Restart() : kubelet.Start();
  if (!st.ok()) {
    std::cerr << "rdmak8s-fake-kubelet: " << st.message() << "\n";
    return 1;
  }
  // kubelet's pod-resources API, from the recorded allocations.
  std::unique_ptr<FakePodResources> pod_resources;
  if (!pod_resources_socket.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(pod_resources_socket).parent_path(), ec);
    pod_resources = std::make_unique<FakePodResources>(pod_resources_socket);
    if (st = pod_resources->Start(); !st.ok()) {
      std::cerr << "rdmak8s-fake-kubelet: " << st.message() << "\n";
      return 1;
    }
  }
  for (const auto& spec : pod_devices) {
    const size_t eq = spec.find('='), eq2 = spec.find('=', eq == std::string::npos ? eq : eq + 1);
    FakePodResources::Pod pod;
    std::string container;
    if (!pod_resources || eq == std::string::npos || eq2 == std::string::npos ||
        !ParsePod(spec.substr(0, eq), &pod, &container) || eq2 == eq + 1) {
      std::cerr << "rdmak8s-fake-kubelet: --pod-device " << spec
                << ": want NS/NAME[/UID[/CONTAINER]]=RESOURCE=ID1,ID2, with --pod-resources\n";
      return 2;
    }
    pod_resources->RecordAllocation(pod, container, spec.substr(eq + 1, eq2 - eq - 1),
                                    SplitIds(spec.substr(eq2 + 1)));
  }
  const auto timeout = std::chrono::duration_cast<rdmak8s::fake::Clock::duration>(
      std::chrono::duration<double>(timeout_s));
  json out = {{"errors", json::array()}, {"resources", json::object()},
              {"allocations", json::array()}};

  for (const auto& sock : plugin_watcher_sockets) {
    auto info = kubelet.RegisterViaPluginWatcher(sock);
    if (!info.ok()) {
      Fail(out, as_json, info.status().message());
    } else {
      wait_resources.push_back(info->name());
    }
  }
  // Parse allocations up front: each names a resource to wait for.
  struct Alloc {
    std::string resource;
    int count = 0;
    std::vector<std::string> ids;
    std::optional<FakePodResources::Pod> pod;
    std::string container;
  };
  std::vector<Alloc> allocs;
  for (const auto& spec : allocations) {
    Alloc alloc;
    std::string a = spec;
    if (const size_t at = a.rfind('@'); at != std::string::npos) {
      FakePodResources::Pod pod;
      if (!ParsePod(a.substr(at + 1), &pod, &alloc.container)) {
        std::cerr << "rdmak8s-fake-kubelet: --allocate " << spec
                  << ": the pod after @ must be NS/NAME[/UID[/CONTAINER]]\n";
        return 2;
      }
      alloc.pod = pod;
      a = a.substr(0, at);
    }
    auto eq = a.find('=');
    auto colon = a.rfind(':');
    if (eq != std::string::npos) {
      alloc.resource = a.substr(0, eq);
      alloc.ids = SplitIds(a.substr(eq + 1));
    } else if (colon != std::string::npos) {
      alloc.resource = a.substr(0, colon);
      try {
        alloc.count = std::stoi(a.substr(colon + 1));
      } catch (...) {
        alloc.count = -1;
      }
    }
    if (alloc.resource.empty() || (alloc.ids.empty() && alloc.count <= 0)) {
      std::cerr << "rdmak8s-fake-kubelet: --allocate " << a
                << ": want RESOURCE:N (N > 0) or RESOURCE=ID1,ID2\n";
      return 2;
    }
    wait_resources.push_back(alloc.resource);
    allocs.push_back(std::move(alloc));
  }

  for (const auto& res : wait_resources) {
    if (out["resources"].contains(res)) continue;
    if (!kubelet.WaitForRegistrations(res, 1, timeout)) {
      Fail(out, as_json, "resource " + res + " did not register within the timeout");
      continue;
    }
    auto devs = kubelet.WaitForDevices(
        res, [](const v1beta1::ListAndWatchResponse&) { return true; }, timeout);
    if (!devs) {
      Fail(out, as_json, "resource " + res + " sent no device list within the timeout");
      continue;
    }
    json entry = {{"devices", DevicesJson(*devs)}};
    for (const auto& r : kubelet.Registrations()) {
      if (r.resource_name() != res) continue;
      entry["registration"] = {
          {"version", r.version()},
          {"endpoint", r.endpoint()},
          {"pre_start_required", r.options().pre_start_required()},
          {"get_preferred_allocation_available",
           r.options().get_preferred_allocation_available()}};
    }
    out["resources"][res] = entry;
  }

  json merged_env = json::object();
  json env_conflicts = json::array();
  for (const auto& alloc : allocs) {
    std::vector<std::string> ids = alloc.ids;
    // kubelet allocates only what the plugin advertised Healthy: wait for that update (the first
    // one may still be on its way, or say Unhealthy), not for a time.
    auto devs = kubelet.WaitForHealthy(alloc.resource, static_cast<size_t>(std::max(alloc.count, 0)),
                                       alloc.ids, timeout);
    if (!devs) devs = kubelet.LatestDevices(alloc.resource);
    if (ids.empty()) {
      std::vector<std::string> healthy;
      if (devs) {
        for (const auto& d : devs->devices()) {
          if (d.health() == "Healthy") healthy.push_back(d.id());
        }
      }
      if (static_cast<int>(healthy.size()) < alloc.count) {
        Fail(out, as_json, "resource " + alloc.resource + " has " +
                               std::to_string(healthy.size()) + " healthy devices, wanted " +
                               std::to_string(alloc.count) + " (waited " +
                               std::to_string(timeout_s) + " s for a ListAndWatch update with them)");
        continue;
      }
      auto opts = kubelet.Options(alloc.resource);
      if (opts && opts->get_preferred_allocation_available()) {
        auto pref = kubelet.GetPreferredAllocation(alloc.resource, healthy, {}, alloc.count);
        if (pref.ok() && pref->container_responses_size() == 1) {
          for (const auto& id : pref->container_responses(0).deviceids()) ids.push_back(id);
        } else if (!pref.ok()) {
          Fail(out, as_json, pref.status().message());
        }
      }
      if (ids.empty()) ids.assign(healthy.begin(), healthy.begin() + alloc.count);
    }
    auto resp = kubelet.Allocate(alloc.resource, {ids});
    if (!resp.ok()) {
      Fail(out, as_json, resp.status().message());
      continue;
    }
    json entry = {{"resource", alloc.resource}, {"ids", ids}, {"containers", AllocateJson(*resp)}};
    if (alloc.pod) {
      // kubelet's device manager records which container of which pod got the IDs.
      if (pod_resources) pod_resources->RecordAllocation(*alloc.pod, alloc.container, alloc.resource, ids);
      entry["pod"] = {{"namespace", alloc.pod->pod_namespace}, {"name", alloc.pod->name},
                      {"uid", alloc.pod->uid}, {"container", alloc.container}};
    }
    out["allocations"].push_back(std::move(entry));
    if (one_container && resp->container_responses_size() == 1) {
      // kubelet's deviceRunContainerOptions: the first value of a key stays.
      for (const auto& [k, v] : resp->container_responses(0).envs()) {
        if (!merged_env.contains(k)) {
          merged_env[k] = v;
        } else if (merged_env[k] != v) {
          std::string c = k + ": kept " + merged_env[k].get<std::string>() + ", dropped " + v;
          std::cerr << "rdmak8s-fake-kubelet: Environment variable has conflicting setting " << c << "\n";
          env_conflicts.push_back(c);
        }
      }
    }
    if (!as_json) {
      std::string line = "allocated " + alloc.resource + ":";
      for (const auto& id : ids) line += " " + id;
      out_lines.Write(line);
    }
  }

  if (one_container) out["container"] = {{"envs", merged_env}, {"env_conflicts", env_conflicts}};
  // One line, written now: with --watch the process lives on, and a reader of the file sees the
  // whole document, on a line of its own, at once.
  if (as_json) out_lines.Write(OneLine(out));
  if (watch) {
    int sig = 0;
    sigwait(&stop_signals, &sig);
  }
  if (pod_resources) pod_resources->Stop();
  kubelet.Stop();
  return out["errors"].empty() ? 0 : 1;
}
