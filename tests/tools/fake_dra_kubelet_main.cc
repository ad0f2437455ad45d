// rdmak8s-fake-dra-kubelet: kubelet's side of a DRA driver for the e2e suite and for poking a
// driver by hand: the plugin watcher's registration (GetInfo, NotifyRegistrationStatus), then
// one action. Each run registers afresh, as kubelet does after a restart, so the actions can be
// separate processes. See --help.
//
// Output: one JSON document on one line on stdout. Exit status: 0 when the action succeeded for
// every claim, 1 otherwise (the document says why), 2 on bad usage.
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "fakes/fake_dra_kubelet.h"

namespace {

using nlohmann::json;
using rdmak8s::fake::DraApi;
using rdmak8s::fake::DraClaim;
using rdmak8s::fake::FakeDraKubelet;

std::string OneLine(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// "NAMESPACE/NAME/UID" as kubelet names a claim to the driver.
bool ParseClaim(const std::string& text, DraClaim* claim) {
  const auto a = text.find('/');
  const auto b = a == std::string::npos ? a : text.find('/', a + 1);
  if (b == std::string::npos || text.find('/', b + 1) != std::string::npos) return false;
  claim->namespace_name = text.substr(0, a);
  claim->name = text.substr(a + 1, b - a - 1);
  claim->uid = text.substr(b + 1);
  return !claim->namespace_name.empty() && !claim->name.empty() && !claim->uid.empty();
}

const char* HealthName(int h) {
  switch (h) {
    case 1: return "Healthy";
    case 2: return "Unhealthy";
    default: return "Unknown";
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "rdmak8s-fake-dra-kubelet: registers a DRA driver through its plugin-watcher socket as "
      "kubelet does, then prepares or unprepares claims, or reads its device health stream.\n\n"
      "Examples:\n"
      "  rdmak8s-fake-dra-kubelet --socket /var/lib/kubelet/plugins_registry/rdma.rdmak8s.io-reg.sock "
      "prepare --claim default/nic/0d6c...\n"
      "  rdmak8s-fake-dra-kubelet --socket S unprepare --claim default/nic/0d6c...\n"
      "  rdmak8s-fake-dra-kubelet --socket S health --devices 2\n"
      "  rdmak8s-fake-dra-kubelet --socket S health --past 60 --health-timeout 30 "
      "--wait-health node1/mlx5-0=Healthy --timeout 120\n\n"
      "Output: one JSON document on one line."};
  std::string socket;
  std::string api_name = "chosen";
  app.add_option("--socket", socket, "the driver's registration socket in plugins_registry")
      ->required();
  app.add_option("--api", api_name, "DRA service version to call: chosen (what registration "
                 "picked), v1 or v1beta1")
      ->check(CLI::IsMember({"chosen", "v1", "v1beta1"}))
      ->capture_default_str();
  app.require_subcommand(1);
  std::vector<std::string> claim_texts;
  std::string container_request;
  auto* prepare = app.add_subcommand("prepare", "NodePrepareResources for the claims");
  prepare->add_option("--claim", claim_texts, "NAMESPACE/NAME/UID (repeatable)")->required();
  prepare->add_option("--request", container_request,
                      "also print, per claim, the CDI devices kubelet gives a container whose "
                      "claim reference names this request (\"container_cdi_devices\")");
  auto* unprepare = app.add_subcommand("unprepare", "NodeUnprepareResources for the claims");
  unprepare->add_option("--claim", claim_texts, "NAMESPACE/NAME/UID (repeatable)")->required();
  size_t want_devices = 1;
  std::string want_health;
  double timeout_s = 30;
  auto* health = app.add_subcommand(
      "health", "wait for a device health message (v1alpha1 NodeWatchResources) and print it");
  health->add_option("--devices", want_devices, "wait until it lists at least this many devices")
      ->capture_default_str();
  health->add_option("--wait-health", want_health,
                     "POOL/DEVICE=Healthy|Unhealthy|Unknown: wait until that device has it");
  health->add_option("--timeout", timeout_s, "seconds to wait")->capture_default_str();
  int health_timeout_s = 30;
  int past_s = 0;
  health->add_option("--health-timeout", health_timeout_s,
                     "kubelet's staleness timeout: an entry older than this (or than the one the "
                     "driver announces) reads Unknown, as kubelet shows it")
      ->capture_default_str();
  health->add_option("--past", past_s,
                     "wait for a message at least this many seconds after the first, and judge "
                     "--wait-health by kubelet's view then (staleness included)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::vector<DraClaim> claims;
  for (const auto& t : claim_texts) {
    DraClaim c;
    if (!ParseClaim(t, &c)) {
      std::cerr << "rdmak8s-fake-dra-kubelet: --claim " << t << ": want NAMESPACE/NAME/UID\n";
      return 2;
    }
    claims.push_back(c);
  }
  const DraApi api = api_name == "v1" ? DraApi::kV1 : api_name == "v1beta1" ? DraApi::kV1beta1
                                                                             : DraApi::kChosen;
  FakeDraKubelet kubelet{std::chrono::seconds(health_timeout_s)};
  auto info = kubelet.Register(socket);
  if (!info.ok()) {
    std::cout << OneLine({{"error", "register: " + info.status().message()}}) << std::endl;
    return 1;
  }
  json out = {{"driver", info->name()}, {"endpoint", info->endpoint()},
              {"service", kubelet.chosen_service()}};
  bool ok = true;
  if (*prepare) {
    auto r = kubelet.NodePrepareResources(claims, api);
    if (!r.ok()) {
      out["error"] = r.status().message();
      ok = false;
    } else {
      json per = json::object();
      for (const auto& c : claims) {
        auto it = r->claims().find(c.uid);
        if (it == r->claims().end()) {
          per[c.uid] = {{"error", "no answer for this claim"}};
          ok = false;
          continue;
        }
        json devices = json::array();
        for (const auto& d : it->second.devices()) {
          devices.push_back({{"request_names", d.request_names()},
                             {"pool_name", d.pool_name()},
                             {"device_name", d.device_name()},
                             {"cdi_device_ids", d.cdi_device_ids()}});
        }
        per[c.uid] = {{"devices", devices}, {"error", it->second.error()}};
        if (!container_request.empty()) {
          per[c.uid]["container_cdi_devices"] =
              rdmak8s::fake::CdiDevicesForRequest(it->second, container_request);
        }
        ok = ok && it->second.error().empty();
      }
      out["claims"] = per;
    }
  } else if (*unprepare) {
    auto r = kubelet.NodeUnprepareResources(claims, api);
    if (!r.ok()) {
      out["error"] = r.status().message();
      ok = false;
    } else {
      json per = json::object();
      for (const auto& c : claims) {
        auto it = r->claims().find(c.uid);
        std::string err = it == r->claims().end() ? "no answer for this claim" : it->second.error();
        per[c.uid] = {{"error", err}};
        ok = ok && err.empty();
      }
      out["claims"] = per;
    }
  } else if (*health) {
    std::string want_dev, want_state;
    if (!want_health.empty()) {
      const auto eq = want_health.find('=');
      if (eq == std::string::npos) {
        std::cerr << "rdmak8s-fake-dra-kubelet: --wait-health " << want_health
                  << ": want POOL/DEVICE=STATE\n";
        return 2;
      }
      want_dev = want_health.substr(0, eq);
      want_state = want_health.substr(eq + 1);
    }
    const auto wait_for = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(timeout_s));
    if (past_s > 0) {
      // kubelet's view (staleness included) at a message `past_s` after the first.
      const bool fresh = kubelet.WaitForHealthPast(
          std::chrono::seconds(past_s),
          [&](const FakeDraKubelet& k) {
            if (want_dev.empty()) return true;
            const auto slash = want_dev.find('/');
            return HealthName(k.HealthOf(want_dev.substr(0, slash), want_dev.substr(slash + 1))) == want_state;
          },
          wait_for);
      if (!fresh) {
        out["error"] = "no health message " + std::to_string(past_s) +
                       " s after the first showed " + want_health + " as kubelet sees it";
        ok = false;
      }
    }
    auto msg = kubelet.WaitForHealth(
        [&](const v1alpha1::NodeWatchResourcesResponse& m) {
          if (static_cast<size_t>(m.devices_size()) < want_devices) return false;
          if (want_dev.empty()) return true;
          for (const auto& d : m.devices()) {
            if (d.device().pool_name() + "/" + d.device().device_name() == want_dev) {
              return want_state == HealthName(d.health());
            }
          }
          return false;
        },
        wait_for);
    if (!msg) {
      out["error"] = "no health message as wanted within the timeout";
      ok = false;
    } else {
      json devices = json::array();
      for (const auto& d : msg->devices()) {
        devices.push_back({{"pool", d.device().pool_name()},
                           {"device", d.device().device_name()},
                           {"health", HealthName(d.health())},
                           {"kubelet_view", HealthName(kubelet.HealthOf(d.device().pool_name(),
                                                                        d.device().device_name()))},
                           {"message", d.message()},
                           {"timeout_seconds", d.health_check_timeout_seconds()}});
      }
      out["devices"] = devices;
    }
  }
  kubelet.Disconnect();
  std::cout << OneLine(out) << std::endl;
  return ok ? 0 : 1;
}
