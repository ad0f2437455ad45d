// Fuzz target: the parsers of single sysfs attribute values and of the IDs built from them:
// ParseUint / ParseInt / ParseNumberedName (common/src/device/sysfs.h: "0x15b3", "-1", "4:
// ACTIVE"), the device ID rule (rdmak8s/device/device_id.h: PCI addresses, auxiliary names, shared
// pool IDs) and GIDs (rdmak8s/device/roce_gid.h ParseGid, GidForIp). Input: one attribute's text,
// as read(2) returns it with the trailing newline trimmed (SysfsDir::Read), or an ID as kubelet
// hands it back.
//
// Invariants beyond "no crash, no sanitizer report":
//   - every value a parser accepts, printed the way the kernel prints it, parses to the same
//     value (decimal and 0x-hex numbers, "<n>: <name>", GIDs as 8 groups of 4 hex digits);
//   - a refusal is kInvalidArgument naming the attribute;
//   - SharedDeviceId(dev, k) names dev back for every dev SharedDeviceIdDevice accepted;
//   - an accepted PCI address is exactly dddd:bb:dd.f; GidForIp of an IPv6 address is the GID
//     ParseGid reads from it.
#include <arpa/inet.h>

#include <cinttypes>
#include <cstring>

#include "device/sysfs.h"
#include "fuzz/fuzz_check.h"
#include "rdmak8s/device/device_id.h"
#include "rdmak8s/device/device_lookup.h"
#include "rdmak8s/device/roce_gid.h"

namespace {

using namespace rdmak8s;
using internal::ParseInt;
using internal::ParseNumberedName;
using internal::ParseUint;

constexpr std::string_view kWhat = "/sys/x/attr";

void CheckNumbers(std::string_view text) {
  auto u = ParseUint(text, kWhat);
  if (u.ok()) {
    auto dec = ParseUint(std::to_string(*u), kWhat);
    FUZZ_CHECK(dec.ok() && *dec == *u, std::string(text));
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%" PRIx64, *u);
    auto h = ParseUint(hex, kWhat);
    FUZZ_CHECK(h.ok() && *h == *u, std::string(text) + " as " + hex);
  } else {
    FUZZ_CHECK(u.status().code() == StatusCode::kInvalidArgument, u.status().ToString());
    FUZZ_CHECK(u.status().message().find(kWhat) != std::string::npos, u.status().message());
  }
  auto i = ParseInt(text, kWhat);
  if (i.ok()) {
    auto again = ParseInt(std::to_string(*i), kWhat);
    FUZZ_CHECK(again.ok() && *again == *i, std::string(text));
  } else {
    FUZZ_CHECK(i.status().code() == StatusCode::kInvalidArgument, i.status().ToString());
  }
  auto nn = ParseNumberedName(text, kWhat);
  if (nn.ok()) {
    FUZZ_CHECK(nn->name.empty() || nn->name.front() != ' ', nn->name);
    const std::string printed = std::to_string(nn->number) + ": " + nn->name;
    auto again = ParseNumberedName(printed, kWhat);
    FUZZ_CHECK(again.ok() && again->number == nn->number && again->name == nn->name, printed);
  } else {
    FUZZ_CHECK(nn.status().code() == StatusCode::kInvalidArgument, nn.status().ToString());
  }
}

void CheckIds(std::string_view text) {
  if (IsPciAddress(text)) {
    FUZZ_CHECK(text.size() == 12 && text[4] == ':' && text[7] == ':' && text[10] == '.',
               std::string(text));
    FUZZ_CHECK(IsBusDeviceId(text), std::string(text));
  }
  if (IsAuxiliaryDeviceName(text)) {
    FUZZ_CHECK(text.find('/') == std::string_view::npos, std::string(text));
  }
  if (auto dev = SharedDeviceIdDevice(text)) {
    FUZZ_CHECK(!dev->empty() && text.substr(0, dev->size()) == *dev, std::string(text));
    for (int k : {0, 7, 999}) {
      auto back = SharedDeviceIdDevice(SharedDeviceId(*dev, k));
      FUZZ_CHECK(back && *back == *dev, *dev + " k=" + std::to_string(k));
    }
  }
  // Any name the device plugin could be given is a device it can make a shared ID of.
  if (!text.empty()) {
    auto back = SharedDeviceIdDevice(SharedDeviceId(text, 3));
    FUZZ_CHECK(back && *back == text, std::string(text));
  }
}

void CheckGid(std::string_view text) {
  const std::string s(text);
  if (s.find('\0') != std::string::npos) return;  // a C string API: sysfs text has no NUL
  unsigned char b[16];
  if (ParseGid(s, b)) {
    char printed[40];
    std::snprintf(printed, sizeof printed,
                  "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x", b[0],
                  b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                  b[14], b[15]);
    unsigned char again[16];
    FUZZ_CHECK(ParseGid(printed, again) && std::memcmp(b, again, 16) == 0, printed);
    // An IPv6 address is its own RoCE v2 GID.
    const std::string gid = GidForIp(s);
    FUZZ_CHECK(gid == printed, s + " -> " + gid + " vs " + printed);
  }
  const std::string gid = GidForIp(s);
  if (!gid.empty()) {
    unsigned char g[16];
    FUZZ_CHECK(gid.size() == 39 && ParseGid(gid, g), s + " -> " + gid);
    unsigned char v4[4];
    if (inet_pton(AF_INET, s.c_str(), v4) == 1) {
      FUZZ_CHECK(g[10] == 0xff && g[11] == 0xff && std::memcmp(g + 12, v4, 4) == 0, gid);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = rdmak8s::fuzz::AsText(data, size);
  CheckNumbers(text);
  CheckIds(text);
  CheckGid(text);
  return 0;
}
