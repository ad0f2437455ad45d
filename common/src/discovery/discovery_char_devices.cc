// Discovery's char-device index: uverbs/umad/issm class entries and rdma_cm, by owning RDMA
// device and by bus parent (sources: class/infiniband_verbs, class/infiniband_mad, class/misc).
#include "discovery/discovery_char_devices.h"

#include <algorithm>

#include "rdmak8s/base/file_util.h"

namespace rdmak8s::internal::discovery {

using internal::ParseUint;

namespace {

StatusOr<CharDevice> ReadCharDevice(const SysfsDir& klass, const std::string& name,
                                    CharDeviceKind kind, std::string* ibdev) {
  // Attributes are read relative to the class directory ("uverbs0/dev"): no descriptor of its
  // own per char device.
  const std::string prefix = name + "/";
  CharDevice c;
  c.kind = kind;
  c.name = name;
  StatusOr<std::pair<uint32_t, uint32_t>> dev = ParseDevNumbers(klass, prefix);
  if (!dev.ok()) {
    // "uverbs0/dev" missing may mean "uverbs0" itself is missing or a dangling link: name that.
    if (dev.status().code() == StatusCode::kNotFound) {
      if (StatusOr<SysfsDir> sub = klass.Sub(name); !sub.ok()) return sub.status();
    }
    return dev.status();
  }
  auto numbers = *dev;
  c.major = numbers.first;
  c.minor = numbers.second;
  RDMAK8S_ASSIGN_OR_RETURN(*ibdev, klass.Read(prefix + "ibdev"));
  if (kind == CharDeviceKind::kUmad || kind == CharDeviceKind::kIssm) {
    RDMAK8S_ASSIGN_OR_RETURN(std::string port, klass.Read(prefix + "port"));
    RDMAK8S_ASSIGN_OR_RETURN(uint64_t p, ParseUint(port, klass.PathOf(prefix + "port")));
    c.port_num = static_cast<uint32_t>(p);
  }
  return c;
}

}  // namespace

StatusOr<std::pair<uint32_t, uint32_t>> ParseDevNumbers(const SysfsDir& dir,
                                                        const std::string& prefix) {
  const std::string rel = prefix + "dev";
  RDMAK8S_ASSIGN_OR_RETURN(std::string dev, dir.Read(rel));
  size_t colon = dev.find(':');
  if (colon == std::string::npos) {
    return InvalidArgumentError(dir.PathOf(rel) + ": expected \"<major>:<minor>\", got \"" +
                                dev + "\"");
  }
  RDMAK8S_ASSIGN_OR_RETURN(uint64_t major, ParseUint(dev.substr(0, colon), dir.PathOf(rel)));
  RDMAK8S_ASSIGN_OR_RETURN(uint64_t minor, ParseUint(dev.substr(colon + 1), dir.PathOf(rel)));
  return std::make_pair(static_cast<uint32_t>(major), static_cast<uint32_t>(minor));
}


// Scans one char-device class. A missing class (module not loaded) is empty; an unreadable one
// is an error of the whole call; an unreadable entry is a failure with its path.
// With ctx.only_under set (DiscoverOne), only the names the kernel placed under that parent
// (<parent>/infiniband_verbs/uverbsN) are considered, so one device's read does not cost a
// readlink per char device of the host.
Status IndexCharClass(Context& ctx, const std::string& klass_name) {
  StatusOr<SysfsDir> klass = SysfsDir::Open(ctx.root + "/class/" + klass_name);
  if (!klass.ok()) {
    if (klass.status().code() == StatusCode::kNotFound) return Status::Ok();
    return klass.status();
  }
  StatusOr<std::vector<std::string>> listed =
      ctx.only_under.empty() ? klass->List()
                             : internal::ListPath(ctx.only_under + "/" + klass_name);
  if (!listed.ok()) {
    if (!ctx.only_under.empty() && listed.status().code() == StatusCode::kNotFound) {
      return Status::Ok();  // no char device of this class on the parent
    }
    return listed.status();
  }
  std::vector<std::string> names = std::move(listed).value();
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    CharDeviceKind kind;
    if (name.rfind("uverbs", 0) == 0) {
      kind = CharDeviceKind::kUverbs;
    } else if (name.rfind("umad", 0) == 0) {
      kind = CharDeviceKind::kUmad;
    } else if (name.rfind("issm", 0) == 0) {
      kind = CharDeviceKind::kIssm;
    } else {
      continue;  // abi_version
    }
    // ib_uverbs/ib_umad parent their char devices on the RDMA device's own parent:
    // class/<x>/uverbsN -> ../../devices/<parent>/infiniband_verbs/uverbsN.
    std::string parent;
    if (StatusOr<std::string> link = klass->ReadLink(name); link.ok()) {
      parent = Dirname(Dirname(ResolveLink(klass->path(), *link)));
    }
    if (!ctx.only_under.empty() && !parent.empty() && parent != ctx.only_under) continue;
    std::string ibdev;
    StatusOr<CharDevice> c = ReadCharDevice(*klass, name, kind, &ibdev);
    if (!c.ok()) {
      Status s = c.status().Prepend("char device " + name);
      if (parent.empty()) {
        ctx.failures.push_back({"", s});
      } else {
        ctx.char_failures.emplace_back(parent, s);
      }
      continue;
    }
    if (kind == CharDeviceKind::kUverbs && !parent.empty()) ctx.uverbs_ibdevs_by_parent[parent].insert(ibdev);
    ctx.chars[ibdev].push_back(std::move(c).value());
  }
  return Status::Ok();
}

void IndexRdmaCm(Context& ctx) {
  StatusOr<SysfsDir> cm = SysfsDir::Open(ctx.root + "/class/misc/rdma_cm");
  if (cm.ok()) {
    StatusOr<std::pair<uint32_t, uint32_t>> numbers = ParseDevNumbers(*cm);
    if (numbers.ok()) {
      CharDevice c;
      c.kind = CharDeviceKind::kRdmaCm;
      c.name = "rdma_cm";
      c.major = numbers->first;
      c.minor = numbers->second;
      ctx.rdma_cm = c;
    } else {
      ctx.failures.push_back({"", numbers.status().Prepend("char device rdma_cm")});
    }
  } else if (cm.status().code() != StatusCode::kNotFound) {
    ctx.failures.push_back({"", cm.status().Prepend("char device rdma_cm")});
  }
}

}  // namespace rdmak8s::internal::discovery
