// The one naming rule between an RDMA device (and, in shared mode, its k-th share) and the name
// DRA knows it by: the device name in this node's ResourceSlices, in a claim's allocation
// results, in the catalog the preparer looks devices up in. Both the publisher
// (dra/api/slice_devices.h) and the catalog (device_catalog.h) name devices only through here,
// so a name a claim carries always finds the device it was published for.
//
// The rule (resource.k8s.io requires a device name to be an RFC 1123 DNS label):
//   - the plain name: lower case, every character outside [a-z0-9] made '-', leading and
//     trailing '-' trimmed ("mlx5_0" -> "mlx5-0", "rocep65s0f1" as is, "rxe_slot1" ->
//     "rxe-slot1"); empty when nothing alphanumeric is left;
//   - a share: "<name>-<k>" (k = 0..shares-1), as the device plugin's shared IDs;
//   - a plain name longer than what leaves room for the share suffix (63, less "-<k>" for the
//     largest k) keeps its first characters and ends in "-" and 8 hex digits of the FNV-1a hash
//     of the kernel name, so two long names with a common prefix stay apart;
//   - collisions (two kernel names with one plain name, "mlx5_0" and "MLX5-0", or a plain name
//     equal to another device's share name, "x_1" and share 1 of "x"): devices are named in
//     byte order of their kernel names; the first keeps the name, a later one is left unnamed
//     (not published, not preparable) with a note naming both. Kernel names are unique and
//     almost always already [a-z0-9_], so this is the rare, loud case; a device with no plain
//     name at all is left unnamed too. The result depends only on the set of names and the
//     share count, never on the order they were given in.
//
// Pure code, no I/O; thread compatible (const methods may be called from any thread).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rdmak8s::dra {

inline constexpr size_t kMaxDraDeviceName = 63;

// The name of `rdma_dev` alone on a node (no collisions to resolve, no shares): the plain name,
// hashed when longer than 63. Empty when nothing alphanumeric is left.
std::string DraDeviceName(std::string_view rdma_dev);

// What a published device name stands for.
struct DraDeviceRef {
  std::string rdma_dev;
  std::optional<int> share;  // nullopt: the whole device (exclusive, or consumable capacity)
  friend bool operator==(const DraDeviceRef&, const DraDeviceRef&) = default;
};

class DraDeviceNames {
 public:
  DraDeviceNames() = default;
  // Names every device of `rdma_devs` (one node's, duplicates ignored) with `shares` shares
  // each (0: exclusive, no share names).
  DraDeviceNames(std::vector<std::string> rdma_devs, int shares);

  // The name of `rdma_dev` (share nullopt) or of its share `share`; empty when the device is
  // not named (see notes()) or `share` is not in [0, shares).
  std::string Name(std::string_view rdma_dev, std::optional<int> share = std::nullopt) const;
  // Back: the device (and share) `name` stands for; nullopt when no device here has it.
  std::optional<DraDeviceRef> Resolve(std::string_view name) const;
  int shares() const { return shares_; }
  // Devices left unnamed, and why.
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  int shares_ = 0;
  std::map<std::string, std::string, std::less<>> base_of_;  // rdma_dev -> plain or hashed name
  std::map<std::string, DraDeviceRef, std::less<>> ref_of_;  // every name -> what it stands for
  std::vector<std::string> notes_;
};

}  // namespace rdmak8s::dra
