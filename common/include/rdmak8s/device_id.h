// Device IDs: what the device plugin tells kubelet a device is called, which Multus then hands
// every CNI plugin of the chain as `deviceID`. One rule, used by the device plugin to make IDs
// and by the CNI to read them back:
//   - exclusive pools: the RDMA device's bus device, a PCI address ("0000:3b:00.2", as SR-IOV
//     plugins name VFs) or an auxiliary device ("mlx5_core.sf.2"); its RDMA device name when it
//     has neither (rxe, siw) or when its bus device carries several RDMA devices;
//   - shared pools: "<rdma_dev>-<k>", k = 0 .. capacity-1.
// An RDMA device name is checked first by the CNI (a name may itself end in "-<digits>").
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rdmak8s {

// A PCI address with domain, as sysfs names PCI functions: "0000:3b:00.0" (hex digits).
bool IsPciAddress(std::string_view s);
// An auxiliary bus device name: "<module>.<name>.<id>" (auxiliary_device_add names them
// "%s.%s.%d"), e.g. "mlx5_core.sf.2", "mlx5_core.rdma.0".
bool IsAuxiliaryDeviceName(std::string_view s);
// A bus device an RDMA device can sit on: a PCI function or an auxiliary device.
inline bool IsBusDeviceId(std::string_view s) { return IsPciAddress(s) || IsAuxiliaryDeviceName(s); }

// "<rdma_dev>-<k>": the k-th ID of a device in a shared pool.
std::string SharedDeviceId(std::string_view rdma_dev, int k);
// The RDMA device a shared pool ID names ("mlx5_0" for "mlx5_0-3"); nullopt when `id` is not of
// that shape (no '-', nothing before it, or not only digits after the last one).
std::optional<std::string> SharedDeviceIdDevice(std::string_view id);

}  // namespace rdmak8s
