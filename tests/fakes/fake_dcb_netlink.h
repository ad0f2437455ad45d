// FakeDcbNetlink: an in-memory DcbNetlink for tests of per-pod QoS (no DCB-capable NIC here).
//
// Holds the IEEE DCB state of each netdev the test adds: PFC, the APP table, and the trust table
// (std::nullopt models a driver or kernel without one). It answers like the kernel's dcbnl
// (net/dcb/dcbnl.c):
//   - a netdev that was never added is kNotFound (ENODEV);
//   - a netdev marked `unsupported` (veth, virtio: no dcbnl_ops) is kUnimplemented (EOPNOTSUPP)
//     for every call;
//   - AddApp of an entry already present is a no-op; DelApp of an absent entry is kNotFound;
//   - Get/SetTrust without a trust table is kUnimplemented.
// Knob: fail_next makes the next call (any method) return that Status, then resets to OK.
//
// Thread safety: none; tests only.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmak8s/netlink/dcb_netlink.h"

namespace rdmak8s {

class FakeDcbNetlink : public DcbNetlink {
 public:
  struct NetdevState {
    bool unsupported = false;          // no dcbnl_ops
    PfcState pfc{.pfc_cap = 8, .enabled = 0, .delay = 0};
    std::vector<DcbAppEntry> app;
    std::optional<DcbTrust> trust = DcbTrust::kPcp;  // nullopt: no trust table
  };

  // Adds (or replaces) a netdev and returns its state for further setup.
  NetdevState& AddNetdev(const std::string& netdev) { return AddNetdev(netdev, NetdevState()); }
  NetdevState& AddNetdev(const std::string& netdev, NetdevState state) {
    return netdevs_[netdev] = std::move(state);
  }
  NetdevState* Find(const std::string& netdev) {
    auto it = netdevs_.find(netdev);
    return it == netdevs_.end() ? nullptr : &it->second;
  }

  Status fail_next;
  int set_calls = 0;  // SetPfcEnabled + AddApp + DelApp + SetTrust that reached the "kernel"

  StatusOr<PfcState> GetPfc(std::string_view netdev) override {
    auto [st, s] = Lookup(netdev, "get PFC");
    if (!s.ok()) return s;
    return st->pfc;
  }
  Status SetPfcEnabled(std::string_view netdev, uint8_t enabled_mask) override {
    auto [st, s] = Lookup(netdev, "set PFC");
    if (!s.ok()) return s;
    ++set_calls;
    st->pfc.enabled = enabled_mask;
    return Status::Ok();
  }
  StatusOr<std::vector<DcbAppEntry>> GetApp(std::string_view netdev) override {
    auto [st, s] = Lookup(netdev, "get APP table");
    if (!s.ok()) return s;
    return st->app;
  }
  Status AddApp(std::string_view netdev, const std::vector<DcbAppEntry>& entries) override {
    auto [st, s] = Lookup(netdev, "add APP entries");
    if (!s.ok()) return s;
    ++set_calls;
    for (const auto& e : entries) {
      if (std::find(st->app.begin(), st->app.end(), e) == st->app.end()) st->app.push_back(e);
    }
    return Status::Ok();
  }
  Status DelApp(std::string_view netdev, const std::vector<DcbAppEntry>& entries) override {
    auto [st, s] = Lookup(netdev, "delete APP entries");
    if (!s.ok()) return s;
    ++set_calls;
    // In order, stopping at the first absent entry, as dcbnl_ieee_del does.
    for (const auto& e : entries) {
      auto it = std::find(st->app.begin(), st->app.end(), e);
      if (it == st->app.end()) {
        return NotFoundError("delete APP entries on " + std::string(netdev) + ": protocol " +
                             std::to_string(e.protocol) + " -> priority " +
                             std::to_string(e.priority) + " not in the APP table");
      }
      st->app.erase(it);
    }
    return Status::Ok();
  }
  StatusOr<DcbTrust> GetTrust(std::string_view netdev) override {
    auto [st, s] = Lookup(netdev, "get APP trust");
    if (!s.ok()) return s;
    if (!st->trust) return NoTrust(netdev, "get APP trust");
    return *st->trust;
  }
  Status SetTrust(std::string_view netdev, DcbTrust trust) override {
    auto [st, s] = Lookup(netdev, "set APP trust");
    if (!s.ok()) return s;
    if (!st->trust) return NoTrust(netdev, "set APP trust");
    ++set_calls;
    st->trust = trust;
    return Status::Ok();
  }

 private:
  std::pair<NetdevState*, Status> Lookup(std::string_view netdev, std::string_view op) {
    const std::string what = std::string(op) + " on " + std::string(netdev);
    if (!fail_next.ok()) {
      Status s = fail_next;
      fail_next = Status::Ok();
      return {nullptr, s};
    }
    auto it = netdevs_.find(std::string(netdev));
    if (it == netdevs_.end()) return {nullptr, NotFoundError(what + ": No such device")};
    if (it->second.unsupported) {
      return {nullptr, UnimplementedError(what + ": Operation not supported (no DCB support)")};
    }
    return {&it->second, Status::Ok()};
  }
  static Status NoTrust(std::string_view netdev, std::string_view op) {
    return UnimplementedError(std::string(op) + " on " + std::string(netdev) +
                              ": Operation not supported (no APP trust table)");
  }

  std::map<std::string, NetdevState, std::less<>> netdevs_;
};

// Forwards to one FakeDcbNetlink shared by every handle opened (the "kernel" state), for code that
// opens its own DcbNetlink per command (the CNI: PluginOptions::new_dcb_netlink).
class SharedDcb : public DcbNetlink {
 public:
  explicit SharedDcb(FakeDcbNetlink* f) : f_(f) {}
  StatusOr<PfcState> GetPfc(std::string_view n) override { return f_->GetPfc(n); }
  Status SetPfcEnabled(std::string_view n, uint8_t m) override { return f_->SetPfcEnabled(n, m); }
  StatusOr<std::vector<DcbAppEntry>> GetApp(std::string_view n) override { return f_->GetApp(n); }
  Status AddApp(std::string_view n, const std::vector<DcbAppEntry>& e) override { return f_->AddApp(n, e); }
  Status DelApp(std::string_view n, const std::vector<DcbAppEntry>& e) override { return f_->DelApp(n, e); }
  StatusOr<DcbTrust> GetTrust(std::string_view n) override { return f_->GetTrust(n); }
  Status SetTrust(std::string_view n, DcbTrust t) override { return f_->SetTrust(n, t); }

 private:
  FakeDcbNetlink* f_;
};

}  // namespace rdmak8s
