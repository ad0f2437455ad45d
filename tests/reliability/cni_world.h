// CniWorld: the directory tests/reliability/world_plugin.cc runs over (see that file for the
// layout), built from the rxe_veth fixture with `devices` RoCE devices rxe0..rxeN-1 on one PF
// netdev (veth0, so its ECN knobs are one node-wide knob every attachment shares), each device
// with a rdma_cm default_roce_tos and a traffic_class, and a GID table holding the RoCE v2 GIDs
// of the given pod IPs. And what a test asserts about the node: NodeState.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "cni/state.h"
#include "rdmak8s/device/device_lookup.h"
#include "rdmak8s/device/roce_gid.h"
#include "rdmak8s/netlink/netns.h"
#include "support/exec_capture.h"
#include "support/test_dirs.h"

namespace rdmak8s::testing {

inline bool WorldSh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

inline bool WorldWrite(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text << "\n";
  return static_cast<bool>(f);
}

inline std::string WorldRead(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  f >> s;
  return s;
}

// What the node looks like: where each device is, each knob's value, records, saved originals.
struct NodeState {
  std::map<std::string, std::string> where;  // rdma dev -> netns key
  std::map<std::string, std::string> knobs;  // knob file (relative to the world) -> value
  size_t records = 0;
  size_t saved_originals = 0;
  bool operator==(const NodeState&) const = default;
};

// gtest prints a NodeState field by field.
inline void PrintTo(const NodeState& s, std::ostream* os) {
  for (const auto& [dev, key] : s.where) *os << dev << " in " << key << "; ";
  for (const auto& [k, v] : s.knobs) *os << k << "=" << v << "; ";
  *os << s.records << " records, " << s.saved_originals << " saved originals";
}

class CniWorld {
 public:
  CniWorld(std::string dir, std::string node_key) : dir_(std::move(dir)), node_key_(std::move(node_key)) {}
  const std::string& dir() const { return dir_; }
  std::string state_dir() const { return dir_ + "/state"; }

  // `ips`: the pod IPs whose GIDs every device's port 1 shows.
  bool Build(int devices, bool shared, const std::vector<std::string>& ips) {
    const std::string node = dir_ + "/node";
    if (!WorldSh("mkdir -p " + dir_ + "/rdma && cp -a " + RDMAK8S_FIXTURES_DIR + "/sysfs/rxe_veth " + node)) return false;
    const std::string ib = node + "/devices/virtual/infiniband";
    for (int d = 0; d < devices; ++d) {
      const std::string dev = "rxe" + std::to_string(d);
      if (d > 0 && !WorldSh("cp -a " + ib + "/rxe0 " + ib + "/" + dev + " && ln -s ../../devices/virtual/infiniband/" +
                            dev + " " + node + "/class/infiniband/" + dev)) {
        return false;
      }
      const std::string port = ib + "/" + dev + "/ports/1";
      for (size_t i = 0; i < ips.size(); ++i) {
        const std::string idx = std::to_string(i + 2);
        if (!WorldWrite(port + "/gids/" + idx, GidForIp(ips[i])) ||
            !WorldWrite(port + "/gid_attrs/types/" + idx, "RoCE v2") ||
            !WorldWrite(port + "/gid_attrs/ndevs/" + idx, "veth0")) {
          return false;
        }
      }
      if (!WorldSh("mkdir -p " + ib + "/" + dev + "/tc/1 " + dir_ + "/config/rdma_cm/" + dev + "/ports/1") ||
          !WorldWrite(ib + "/" + dev + "/tc/1/traffic_class", "0") ||
          !WorldWrite(dir_ + "/config/rdma_cm/" + dev + "/ports/1/default_roce_tos", "0") ||
          !WorldWrite(dir_ + "/rdma/" + dev, node_key_)) {
        return false;
      }
      devices_.push_back(dev);
    }
    for (const char* side : {"rp", "np"}) {
      const std::string e = node + "/devices/virtual/net/veth0/ecn/roce_" + side + "/enable";
      if (!WorldSh("mkdir -p " + e)) return false;
      for (int p = 0; p < 8; ++p) {
        if (!WorldWrite(e + "/" + std::to_string(p), "0")) return false;
      }
    }
    return WorldWrite(dir_ + "/mode", shared ? "shared" : "exclusive") &&
           WorldWrite(dir_ + "/node_netns", node_key_) &&
           WorldWrite(dir_ + "/node.json", "{\"sysfsRoot\":\"" + node + "\",\"configfsRoot\":\"" + dir_ +
                                                "/config\",\"stateDir\":\"" + state_dir() + "\",\"logFile\":\"" +
                                                dir_ + "/rdmak8s.log\"}");
  }

  NodeState State() const {
    NodeState s;
    for (const auto& dev : devices_) {
      s.where[dev] = WorldRead(dir_ + "/rdma/" + dev);
      const std::string root = s.where[dev] == node_key_ ? "node" : "views/" + s.where[dev];
      s.knobs["tos " + dev] = WorldRead(dir_ + "/config/rdma_cm/" + dev + "/ports/1/default_roce_tos");
      s.knobs["tc " + dev] = WorldRead(dir_ + "/" + root + "/devices/virtual/infiniband/" + dev + "/tc/1/traffic_class");
    }
    for (const char* side : {"rp", "np"}) {
      const std::string rel = std::string("node/devices/virtual/net/veth0/ecn/roce_") + side + "/enable/3";
      s.knobs[rel] = WorldRead(dir_ + "/" + rel);
    }
    cni::StateStore store(state_dir());
    if (auto l = store.List(); l.ok()) s.records = l->size();
    if (auto k = store.LoadQosOriginals(); k.ok()) s.saved_originals = k->size();
    return s;
  }

 private:
  std::string dir_, node_key_;
  std::vector<std::string> devices_;
};

// fork + execve(argv) with `env`, from netns `ns`, `input` on stdin (support/exec_capture.h).
inline ExecResult ExecIn(const Netns& ns, const std::vector<std::string>& argv,
                         const std::vector<std::string>& env, const std::string& input) {
  ExecResult r;
  (void)RunInNetns(ns, [&]() -> Status {
    r = ExecCapture(argv, env, input);
    return Status::Ok();
  });
  return r;
}

}  // namespace rdmak8s::testing
