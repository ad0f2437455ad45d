// Fuzz target: discovery's and the CNI's parsing of whole sysfs trees
// (rdmak8s/discovery/discovery.h SysfsDiscovery, rdmak8s/device/port_state.h ReadPortLinkState, the
// CNI's rdmak8s/device/device_lookup.h DeviceLookup, rdmak8s/device/gid_table.h GidTable): the
// attribute helpers in context (dev "<major>:<minor>", numa_node, vendor/device IDs, port,
// node_type, state/phys_state, gids, pkeys, dev_port, ibdev) as a kernel or driver with a bug
// could print them. A copy of a fixture tree (tests/fixtures/sysfs/mlx5_roce_sriov: PF, VFs,
// a VLAN, a macvlan) is made once; each input rewrites some of its attribute files.
//
// Input: records "<selector byte><new contents up to the next NUL byte>"; the selector picks
// one of the tree's regular files (in name order, modulo their number). Files are restored
// after each input.
//
// Invariants beyond "no crash, no sanitizer report":
//   - DiscoverAll succeeds (class/infiniband is there and readable), and every device it lists
//     is either discovered or named in failures: none is dropped silently;
//   - DiscoverOne agrees with DiscoverAll on which devices read fully;
//   - a discovered device's ports are 1-based and in order;
//   - the GID search finds each RoCE v2 GID a whole read of the table shows, at its lowest index.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "device/sysfs.h"
#include "fuzz/fuzz_check.h"
#include "rdmak8s/device/device_lookup.h"
#include "rdmak8s/device/gid_table.h"
#include "rdmak8s/device/port_state.h"
#include "rdmak8s/device/roce_gid.h"
#include "rdmak8s/discovery/discovery.h"

namespace {

using namespace rdmak8s;
namespace fs = std::filesystem;

struct Tree {
  std::string root;
  std::vector<std::string> files;              // regular files, relative, sorted
  std::map<std::string, std::string> original;  // their contents
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteAll(const std::string& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  FUZZ_CHECK(out.good(), "write " + path);
}

const Tree& TheTree() {
  // Never destroyed: the atexit cleanup below runs after static destructors would have.
  static const Tree& tree = *new Tree([] {
    Tree t;
    std::string base = fs::is_directory("/dev/shm") ? "/dev/shm" : fs::temp_directory_path().string();
    std::string tmpl = base + "/rdmak8s-fuzz-sysfs-XXXXXX";
    FUZZ_CHECK(mkdtemp(tmpl.data()) != nullptr, "mkdtemp " + tmpl);
    t.root = tmpl + "/sys";
    fs::copy(std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/mlx5_roce_sriov", t.root,
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    for (auto it = fs::recursive_directory_iterator(t.root); it != fs::recursive_directory_iterator(); ++it) {
      if (it->is_regular_file() && !it->is_symlink()) {
        std::string rel = fs::relative(it->path(), t.root).string();
        t.original[rel] = ReadAll(it->path());
        t.files.push_back(rel);
      }
    }
    std::sort(t.files.begin(), t.files.end());
    FUZZ_CHECK(!t.files.empty(), "fixture tree has no files");
    std::atexit([] { std::error_code ec; fs::remove_all(fs::path(TheTree().root).parent_path(), ec); });
    return t;
  }());
  return tree;
}

void CheckDiscovery(const Tree& t) {
  auto names = internal::ListPath(t.root + "/class/infiniband");
  FUZZ_CHECK(names.ok(), names.status().ToString());
  SysfsDiscovery discovery(DiscoveryOptions{t.root, nullptr});
  auto all = discovery.DiscoverAll();
  FUZZ_CHECK(all.ok(), all.status().ToString());
  FUZZ_CHECK(all->rdma_present, "class/infiniband is there");
  std::set<std::string> seen, discovered;
  for (const RdmaDevice& d : all->devices) {
    seen.insert(d.name);
    discovered.insert(d.name);
    uint32_t last = 0;
    for (const Port& p : d.ports) {
      FUZZ_CHECK(p.port_num > last, d.name + " port " + std::to_string(p.port_num));
      last = p.port_num;
    }
  }
  for (const DeviceFailure& f : all->failures) {
    seen.insert(f.rdma_dev);
    FUZZ_CHECK(!f.status.ok(), "a failure with an OK status");
  }
  for (const std::string& n : *names) {
    FUZZ_CHECK(seen.count(n), n + " neither discovered nor failed");
    auto one = discovery.DiscoverOne(n);
    FUZZ_CHECK(one.ok() == (discovered.count(n) == 1),
               n + ": DiscoverOne " + (one.ok() ? "read it" : one.status().ToString()) +
                   ", DiscoverAll " + (discovered.count(n) ? "read it" : "did not"));
    for (uint32_t port = 1; port <= 2; ++port) (void)ReadPortLinkState(t.root, n, port);
  }
}

// The search against a whole read of the same table: every RoCE v2 GID ReadAll shows is found,
// at the lowest index it has.
void CheckGidSearch(const std::string& port_dir) {
  auto table = GidTable::Open(port_dir);
  if (!table.ok()) return;
  auto all = table->ReadAll();
  (void)table->Search({GidForIp("10.0.0.2")}, GidType::kRoceV2, GidScope::kFilledPrefix);
  if (!all.ok()) return;
  std::map<std::string, uint32_t> lowest;
  for (const GidEntry& e : *all) {
    if (e.type == GidType::kRoceV2) lowest.emplace(GidForIp(e.gid), e.index);
  }
  if (lowest.empty()) return;
  std::set<std::string> wanted;
  for (const auto& [gid, index] : lowest) wanted.insert(gid);
  auto found = table->Search(wanted, GidType::kRoceV2, GidScope::kWholeTable);
  FUZZ_CHECK(found.ok(), port_dir + ": ReadAll read the table, the search failed: " +
                             found.status().ToString());
  FUZZ_CHECK(found->found == lowest, port_dir + ": the search and ReadAll disagree on RoCE v2 GIDs");
}

void CheckCniView(const Tree& t) {
  DeviceLookup sysfs(t.root);
  auto devs = sysfs.ListDevices();
  if (!devs.ok()) return;
  for (const std::string& n : *devs) {
    auto d = sysfs.ReadDevice(n);
    if (d.ok()) {
      for (const auto& p : d->ports) {
        (void)sysfs.ReadPkeys(n, p.port_num);
        (void)sysfs.ReadPortState(n, p.port_num);
        CheckGidSearch(t.root + "/class/infiniband/" + n + "/ports/" + std::to_string(p.port_num));
      }
      (void)sysfs.PfNetdev(*d);
    }
    (void)sysfs.ResolveDeviceId(n);
  }
  for (const char* id : {"0000:5e:00.0", "0000:5e:00.2", "mlx5_0-1", "ens1f0np0"}) {
    (void)sysfs.ResolveDeviceId(id);
    uint32_t port = 0;
    (void)sysfs.ResolveByNetdev(id, &port);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Tree& t = TheTree();
  std::set<std::string> changed;
  size_t i = 0;
  while (i < size) {
    const std::string& rel = t.files[data[i] % t.files.size()];
    size_t end = i + 1;
    while (end < size && data[end] != 0) ++end;
    WriteAll(t.root + "/" + rel, std::string_view(reinterpret_cast<const char*>(data) + i + 1, end - i - 1));
    changed.insert(rel);
    i = end + 1;
  }
  CheckDiscovery(t);
  CheckCniView(t);
  for (const std::string& rel : changed) WriteAll(t.root + "/" + rel, t.original.at(rel));
  return 0;
}
