#include "dra/device_name.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace rdmak8s::dra {
namespace {

std::string Normalise(std::string_view rdma_dev) {
  std::string out;
  for (char c : rdma_dev) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    out.push_back(ok ? c : '-');
  }
  size_t first = out.find_first_not_of('-');
  if (first == std::string::npos) return "";
  size_t last = out.find_last_not_of('-');
  return out.substr(first, last - first + 1);
}

std::string Fnv1a32Hex(std::string_view s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) {
    h ^= c;
    h *= 16777619u;
  }
  char buf[9];
  std::snprintf(buf, sizeof(buf), "%08x", h);
  return buf;
}

// `plain` cut to leave room for "-<hash8>" within `max`, then the hash of the kernel name.
std::string Hashed(const std::string& plain, std::string_view rdma_dev, size_t max) {
  std::string head = plain.substr(0, max > 9 ? max - 9 : 0);
  while (!head.empty() && head.back() == '-') head.pop_back();
  return head.empty() ? Fnv1a32Hex(rdma_dev) : head + "-" + Fnv1a32Hex(rdma_dev);
}

size_t MaxBase(int shares) {
  if (shares <= 0) return kMaxDraDeviceName;
  return kMaxDraDeviceName - 1 - std::to_string(shares - 1).size();
}

std::string ShareName(const std::string& base, int k) { return base + "-" + std::to_string(k); }

}  // namespace

std::string DraDeviceName(std::string_view rdma_dev) {
  std::string plain = Normalise(rdma_dev);
  if (plain.size() <= kMaxDraDeviceName) return plain;
  return Hashed(plain, rdma_dev, kMaxDraDeviceName);
}

DraDeviceNames::DraDeviceNames(std::vector<std::string> rdma_devs, int shares)
    : shares_(std::max(shares, 0)) {
  std::sort(rdma_devs.begin(), rdma_devs.end());
  rdma_devs.erase(std::unique(rdma_devs.begin(), rdma_devs.end()), rdma_devs.end());
  const size_t max = MaxBase(shares_);
  auto names_of = [&](const std::string& base) {
    std::vector<std::string> out{base};
    for (int k = 0; k < shares_; ++k) out.push_back(ShareName(base, k));
    return out;
  };
  // The device already holding one of `base`'s names; empty when they are all free.
  auto holder = [&](const std::string& base) -> std::string {
    for (const auto& n : names_of(base)) {
      if (auto it = ref_of_.find(n); it != ref_of_.end()) return it->second.rdma_dev;
    }
    return "";
  };
  for (const std::string& dev : rdma_devs) {
    std::string plain = Normalise(dev);
    if (plain.empty()) {
      notes_.push_back(dev + ": no DRA device name: nothing alphanumeric in it");
      continue;
    }
    std::string base = plain.size() <= max ? plain : Hashed(plain, dev, max);
    if (std::string other = holder(base); !other.empty()) {
      notes_.push_back(dev + ": no DRA device name: \"" + base + "\" (or one of its share names) "
                       "is " + other + "'s, which comes first in byte order");
      continue;
    }
    base_of_[dev] = base;
    ref_of_[base] = {dev, std::nullopt};
    for (int k = 0; k < shares_; ++k) ref_of_[ShareName(base, k)] = {dev, k};
  }
}

std::string DraDeviceNames::Name(std::string_view rdma_dev, std::optional<int> share) const {
  auto it = base_of_.find(rdma_dev);
  if (it == base_of_.end()) return "";
  if (!share) return it->second;
  if (*share < 0 || *share >= shares_) return "";
  return ShareName(it->second, *share);
}

std::optional<DraDeviceRef> DraDeviceNames::Resolve(std::string_view name) const {
  auto it = ref_of_.find(name);
  if (it == ref_of_.end()) return std::nullopt;
  return it->second;
}

}  // namespace rdmak8s::dra
