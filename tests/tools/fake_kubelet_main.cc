// rdmak8s-fake-kubelet: a kubelet stand-in for the e2e suite and for poking a plugin by hand.
// See --help. Exit status: 0 when every wait and RPC succeeded, 1 otherwise, 2 on bad usage.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "support/fake_kubelet.h"

namespace {

using nlohmann::json;
using rdmak8s::fake::FakeKubelet;

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
                 "with N healthy devices (or every named ID healthy)");
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
  };
  std::vector<Alloc> allocs;
  for (const auto& a : allocations) {
    Alloc alloc;
    auto eq = a.find('=');
    auto colon = a.rfind(':');
    if (eq != std::string::npos) {
      alloc.resource = a.substr(0, eq);
      std::string rest = a.substr(eq + 1);
      size_t pos = 0;
      while (pos <= rest.size()) {
        size_t comma = rest.find(',', pos);
        if (comma == std::string::npos) comma = rest.size();
        if (comma > pos) alloc.ids.push_back(rest.substr(pos, comma - pos));
        pos = comma + 1;
      }
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
    out["allocations"].push_back(
        {{"resource", alloc.resource}, {"ids", ids}, {"containers", AllocateJson(*resp)}});
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
  kubelet.Stop();
  return out["errors"].empty() ? 0 : 1;
}
