#include "rdmak8s/device/device_id.h"

#include <cctype>

namespace rdmak8s {

namespace {

// include/rdma/ib_verbs.h: the kernel's name buffer, NUL included.
constexpr size_t kIbDeviceNameMax = 64;

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

bool IsRdmaDeviceName(std::string_view s) {
  if (s.empty() || s.size() >= kIbDeviceNameMax || s == "." || s == "..") return false;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    // '/' would leave class/infiniband; a NUL cuts the path the kernel sees short of the name
    // we checked ("mlx5_0\0alias" opens mlx5_0); other control bytes are never in a name the
    // kernel gave and would reach logs and JSON as they are.
    if (c == '/' || u < 0x20 || u == 0x7f) return false;
  }
  return true;
}

bool IsPciAddress(std::string_view s) {
  // dddd:bb:dd.f
  if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9, 11}) {
    if (!std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

bool IsAuxiliaryDeviceName(std::string_view s) {
  const size_t last = s.rfind('.');
  if (last == std::string_view::npos || !AllDigits(s.substr(last + 1))) return false;
  const size_t first = s.find('.');
  // Module and name both non-empty: "<module>.<name>.<id>".
  return first > 0 && first < last - 1 && IsRdmaDeviceName(s);
}

std::string ExclusiveDeviceId(std::string_view rdma_dev, std::string_view bus_device,
                              bool bus_shared) {
  return std::string(bus_device.empty() || bus_shared ? rdma_dev : bus_device);
}

std::string SharedDeviceId(std::string_view rdma_dev, int k) {
  return std::string(rdma_dev) + "-" + std::to_string(k);
}

std::optional<std::string> SharedDeviceIdDevice(std::string_view id) {
  const size_t dash = id.rfind('-');
  if (dash == std::string_view::npos || dash == 0 || !AllDigits(id.substr(dash + 1))) {
    return std::nullopt;
  }
  return std::string(id.substr(0, dash));
}

}  // namespace rdmak8s
