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

// A name that can be an RDMA device's (a directory entry of class/infiniband): not empty, shorter
// than IB_DEVICE_NAME_MAX (64, with its NUL), not "." or "..", no '/', no NUL or other control
// byte (0x00-0x1f, 0x7f). What every lookup by name checks before it builds a path.
bool IsRdmaDeviceName(std::string_view s);
// A PCI address with domain, as sysfs names PCI functions: "0000:3b:00.0" (hex digits).
bool IsPciAddress(std::string_view s);
// An auxiliary bus device name: "<module>.<name>.<id>" (auxiliary_device_add names them
// "%s.%s.%d"), e.g. "mlx5_core.sf.2", "mlx5_core.rdma.0".
bool IsAuxiliaryDeviceName(std::string_view s);
// A bus device an RDMA device can sit on: a PCI function or an auxiliary device.
inline bool IsBusDeviceId(std::string_view s) { return IsPciAddress(s) || IsAuxiliaryDeviceName(s); }

// The ID of an RDMA device in an exclusive pool: its bus device (`bus_device`, a PCI address or
// an auxiliary device name) when it is the only RDMA device on it, else its RDMA device name
// (also when it has no bus device: rxe, siw). `bus_shared`: another RDMA device sits on the same
// bus device (two RDMA drivers on one function), counted on the node whatever pool it is in, so
// that the CNI, which resolves a bus device ID to the one RDMA device on it, reads back the
// device the plugin meant.
std::string ExclusiveDeviceId(std::string_view rdma_dev, std::string_view bus_device,
                              bool bus_shared);

// "<rdma_dev>-<k>": the k-th ID of a device in a shared pool.
std::string SharedDeviceId(std::string_view rdma_dev, int k);
// The RDMA device a shared pool ID names ("mlx5_0" for "mlx5_0-3"); nullopt when `id` is not of
// that shape (no '-', nothing before it, or not only digits after the last one).
std::optional<std::string> SharedDeviceIdDevice(std::string_view id);

}  // namespace rdmak8s
