// The QoS setting table: each kind's key, read and write side by side, and the one dispatch.
#include "rdmak8s/qos/qos_setting.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "rdmak8s/base/file_util.h"
#include "rdmak8s/base/numbers.h"
#include "rdmak8s/device/sysfs_attr.h"

namespace rdmak8s {

namespace {

std::vector<std::string_view> SplitKey(std::string_view s) {
  std::vector<std::string_view> out;
  for (;;) {
    size_t c = s.find(':');
    out.push_back(s.substr(0, c));
    if (c == std::string_view::npos) break;
    s.remove_prefix(c + 1);
  }
  return out;
}

// A number inside a key or a value (a priority, a DSCP, a port) no larger than `max`. Keys come
// back from records on disk: a bad one is an error naming `what`, never a shift past the PFC
// mask's width.
StatusOr<unsigned> SettingNumber(std::string_view text, unsigned max, const std::string& what) {
  RDMAK8S_ASSIGN_OR_RETURN(uint64_t v, ParseUnsignedInRange(text, what, 0, max));
  return static_cast<unsigned>(v);
}

// Setting files are opened beneath their root (sysfs or configfs): a link out of it (a tree that
// is not the kernel's, a netdev name with "..") fails instead of truncating a file elsewhere.
struct SettingFile {
  std::string root;
  std::string rel;
  std::string path() const { return root + "/" + rel; }
};

Status Unsupported(const std::string& what) { return UnimplementedError(what + ": not supported here"); }

// A missing file is a setting this driver does not have.
StatusOr<std::string> ReadFileSetting(const SettingFile& f, const std::string& what) {
  auto v = ReadSysfsAttrBeneath(f.root, f.rel);
  if (!v.ok() && v.status().code() == StatusCode::kNotFound) return Unsupported(what + " " + f.path());
  return v;
}

Status WriteFileSetting(const SettingFile& f, const std::string& value) {
  auto fd = OpenBeneath(f.root, f.rel, O_WRONLY | O_TRUNC);
  if (!fd.ok()) return fd.status().Prepend("write " + value);
  std::string v = value + "\n";
  ssize_t n = write(*fd, v.data(), v.size());
  int e = errno;
  close(*fd);
  if (n < 0) return ErrnoError(e, "write " + value + " to " + f.path());
  return Status::Ok();
}

StatusOr<DcbNetlink*> Dcb(const QosSettingContext& ctx, const std::string& pf) {
  if (ctx.dcb == nullptr) return Unsupported("DCB on " + pf);
  return ctx.dcb;
}

// --- trust:<pf> -------------------------------------------------------------------------------
std::string KeyOf(const TrustSetting& s) { return "trust:" + s.pf; }
StatusOr<std::string> ReadOf(const QosSettingContext& ctx, const TrustSetting& s) {
  RDMAK8S_ASSIGN_OR_RETURN(DcbNetlink * dcb, Dcb(ctx, s.pf));
  RDMAK8S_ASSIGN_OR_RETURN(DcbTrust t, dcb->GetTrust(s.pf));
  return std::string(t == DcbTrust::kDscp ? "dscp" : "pcp");
}
Status WriteOf(const QosSettingContext& ctx, const TrustSetting& s, const std::string& value,
               const std::string& what) {
  RDMAK8S_ASSIGN_OR_RETURN(DcbNetlink * dcb, Dcb(ctx, s.pf));
  return dcb->SetTrust(s.pf, value == "dscp" ? DcbTrust::kDscp : DcbTrust::kPcp).Prepend(what);
}

// --- pfc:<pf>:<prio> --------------------------------------------------------------------------
std::string KeyOf(const PfcSetting& s) { return "pfc:" + s.pf + ":" + std::to_string(s.priority); }
StatusOr<std::string> ReadOf(const QosSettingContext& ctx, const PfcSetting& s) {
  RDMAK8S_ASSIGN_OR_RETURN(DcbNetlink * dcb, Dcb(ctx, s.pf));
  RDMAK8S_ASSIGN_OR_RETURN(PfcState state, dcb->GetPfc(s.pf));
  return std::string((state.enabled >> s.priority) & 1 ? "on" : "off");
}
Status WriteOf(const QosSettingContext& ctx, const PfcSetting& s, const std::string& value,
               const std::string& what) {
  RDMAK8S_ASSIGN_OR_RETURN(DcbNetlink * dcb, Dcb(ctx, s.pf));
  auto state = dcb->GetPfc(s.pf);
  if (!state.ok()) return state.status().Prepend(what);
  uint8_t bit = static_cast<uint8_t>(1u << s.priority);
  uint8_t mask = value == "on" ? (state->enabled | bit) : (state->enabled & ~bit);
  return dcb->SetPfcEnabled(s.pf, mask).Prepend(what);
}

// --- app:<pf>:<dscp> --------------------------------------------------------------------------
std::string KeyOf(const AppSetting& s) { return "app:" + s.pf + ":" + std::to_string(s.dscp); }
StatusOr<std::string> ReadOf(const QosSettingContext& ctx, const AppSetting& s) {
  RDMAK8S_ASSIGN_OR_RETURN(DcbNetlink * dcb, Dcb(ctx, s.pf));
  RDMAK8S_ASSIGN_OR_RETURN(auto app, dcb->GetApp(s.pf));
  for (const auto& e : app) {
    if (e.selector == kDcbAppSelDscp && e.protocol == s.dscp) return std::to_string(e.priority);
  }
  return std::string("none");
}
Status WriteOf(const QosSettingContext& ctx, const AppSetting& s, const std::string& value,
               const std::string& what) {
  RDMAK8S_ASSIGN_OR_RETURN(DcbNetlink * dcb, Dcb(ctx, s.pf));
  auto prio = value == "none" ? StatusOr<unsigned>(0u) : SettingNumber(value, 7, what);
  if (!prio.ok()) return prio.status();
  auto app = dcb->GetApp(s.pf);
  if (!app.ok()) return app.status().Prepend(what);
  std::vector<DcbAppEntry> stale;
  for (const auto& e : *app) {
    if (e.selector == kDcbAppSelDscp && e.protocol == s.dscp) stale.push_back(e);
  }
  if (!stale.empty()) RDMAK8S_RETURN_IF_ERROR_CTX(dcb->DelApp(s.pf, stale), what);
  if (value == "none") return Status::Ok();
  DcbAppEntry e;
  e.selector = kDcbAppSelDscp;
  e.protocol = s.dscp;
  e.priority = static_cast<uint8_t>(*prio);
  return dcb->AddApp(s.pf, {e}).Prepend(what);
}

// --- ecn:<pf>:<rp|np>:<prio> ------------------------------------------------------------------
std::string_view PointName(EcnPoint p) { return p == EcnPoint::kRp ? "rp" : "np"; }
std::string KeyOf(const EcnSetting& s) {
  return "ecn:" + s.pf + ":" + std::string(PointName(s.point)) + ":" + std::to_string(s.priority);
}
SettingFile EcnFile(const QosSettingContext& ctx, const EcnSetting& s) {
  return {ctx.sysfs_root, "class/net/" + s.pf + "/ecn/roce_" + std::string(PointName(s.point)) +
                              "/enable/" + std::to_string(s.priority)};
}
StatusOr<std::string> ReadOf(const QosSettingContext& ctx, const EcnSetting& s) {
  return ReadFileSetting(EcnFile(ctx, s), "ECN knob");
}
Status WriteOf(const QosSettingContext& ctx, const EcnSetting& s, const std::string& value,
               const std::string&) {
  return WriteFileSetting(EcnFile(ctx, s), value);
}

// --- tos:<rdma_dev>:<port> --------------------------------------------------------------------
std::string KeyOf(const TosSetting& s) { return "tos:" + s.rdma_dev + ":" + std::to_string(s.port); }
// rdma_cm configfs: mkdir <root>/rdma_cm/<dev> makes the kernel create the device's group with
// ports/<n>/default_roce_tos (drivers/infiniband/core/cma_configfs.c).
SettingFile TosFileOf(const QosSettingContext& ctx, const TosSetting& s) {
  return {ctx.configfs_root,
          "rdma_cm/" + s.rdma_dev + "/ports/" + std::to_string(s.port) + "/default_roce_tos"};
}
StatusOr<SettingFile> TosFile(const QosSettingContext& ctx, const TosSetting& s) {
  const std::string cm = ctx.configfs_root + "/rdma_cm";
  auto dir = OpenBeneath(ctx.configfs_root, "rdma_cm", O_PATH | O_DIRECTORY);
  if (!dir.ok()) {
    if (dir.status().code() == StatusCode::kNotFound) return Unsupported("rdma_cm configfs (" + cm + ")");
    return dir.status();
  }
  int rc = mkdirat(*dir, s.rdma_dev.c_str(), 0755);
  int e = errno;
  close(*dir);
  if (rc != 0 && e != EEXIST) return ErrnoError(e, "mkdir " + cm + "/" + s.rdma_dev);
  return TosFileOf(ctx, s);
}
StatusOr<std::string> ReadOf(const QosSettingContext& ctx, const TosSetting& s) {
  RDMAK8S_ASSIGN_OR_RETURN(SettingFile f, TosFile(ctx, s));
  return ReadFileSetting(f, "RoCE ToS");
}
Status WriteOf(const QosSettingContext& ctx, const TosSetting& s, const std::string& value,
               const std::string&) {
  RDMAK8S_ASSIGN_OR_RETURN(SettingFile f, TosFile(ctx, s));
  return WriteFileSetting(f, value);
}

// --- tc:<rdma_dev>:<port> ---------------------------------------------------------------------
std::string KeyOf(const TcSetting& s) { return "tc:" + s.rdma_dev + ":" + std::to_string(s.port); }
SettingFile TcFile(const QosSettingContext& ctx, const TcSetting& s) {
  return {ctx.dev_sysfs_root, "class/infiniband/" + s.rdma_dev + "/tc/" + std::to_string(s.port) +
                                  "/traffic_class"};
}
StatusOr<std::string> ReadOf(const QosSettingContext& ctx, const TcSetting& s) {
  return ReadFileSetting(TcFile(ctx, s), "traffic class");
}
Status WriteOf(const QosSettingContext& ctx, const TcSetting& s, const std::string& value,
               const std::string&) {
  return WriteFileSetting(TcFile(ctx, s), value);
}

// --- keys back to settings --------------------------------------------------------------------
StatusOr<QosSetting::Kind> KindOf(const std::vector<std::string_view>& p, const std::string& what) {
  auto name = [&](size_t i) -> StatusOr<std::string> {
    if (p[i].empty()) return InvalidArgumentError(what + ": empty name");
    return std::string(p[i]);
  };
  auto number = [&](size_t i, unsigned max) { return SettingNumber(p[i], max, what); };
  const std::string_view kind = p[0];
  if (kind == "trust" && p.size() == 2) {
    RDMAK8S_ASSIGN_OR_RETURN(std::string pf, name(1));
    return QosSetting::Kind(TrustSetting{pf});
  }
  if (kind == "pfc" && p.size() == 3) {
    RDMAK8S_ASSIGN_OR_RETURN(std::string pf, name(1));
    RDMAK8S_ASSIGN_OR_RETURN(unsigned prio, number(2, 7));
    return QosSetting::Kind(PfcSetting{pf, static_cast<uint8_t>(prio)});
  }
  if (kind == "app" && p.size() == 3) {
    RDMAK8S_ASSIGN_OR_RETURN(std::string pf, name(1));
    RDMAK8S_ASSIGN_OR_RETURN(unsigned dscp, number(2, 63));
    return QosSetting::Kind(AppSetting{pf, static_cast<uint8_t>(dscp)});
  }
  if (kind == "ecn" && p.size() == 4) {
    RDMAK8S_ASSIGN_OR_RETURN(std::string pf, name(1));
    if (p[2] != "rp" && p[2] != "np") return InvalidArgumentError(what + ": neither rp nor np");
    RDMAK8S_ASSIGN_OR_RETURN(unsigned prio, number(3, 7));
    return QosSetting::Kind(
        EcnSetting{pf, p[2] == "rp" ? EcnPoint::kRp : EcnPoint::kNp, static_cast<uint8_t>(prio)});
  }
  if ((kind == "tos" || kind == "tc") && p.size() == 3) {
    RDMAK8S_ASSIGN_OR_RETURN(std::string dev, name(1));
    RDMAK8S_ASSIGN_OR_RETURN(unsigned port, number(2, UINT32_MAX));
    if (kind == "tos") return QosSetting::Kind(TosSetting{dev, port});
    return QosSetting::Kind(TcSetting{dev, port});
  }
  return InvalidArgumentError(what + ": unknown knob");
}

}  // namespace

StatusOr<QosSetting> QosSetting::FromKey(std::string_view key) {
  const std::string what = "QoS setting key \"" + std::string(key) + "\"";
  RDMAK8S_ASSIGN_OR_RETURN(Kind kind, KindOf(SplitKey(key), what));
  return QosSetting(std::move(kind));
}

std::string QosSetting::Key() const {
  return std::visit([](const auto& s) { return KeyOf(s); }, kind_);
}

bool QosSetting::node_wide() const {
  return !std::holds_alternative<TosSetting>(kind_) && !std::holds_alternative<TcSetting>(kind_);
}

bool QosSetting::dcb() const {
  return std::holds_alternative<TrustSetting>(kind_) || std::holds_alternative<PfcSetting>(kind_) ||
         std::holds_alternative<AppSetting>(kind_);
}

std::string QosSetting::sysfs_device() const {
  if (const auto* tc = std::get_if<TcSetting>(&kind_)) return tc->rdma_dev;
  return "";
}

std::string QosSetting::FilePath(const QosSettingContext& ctx) const {
  if (const auto* s = std::get_if<EcnSetting>(&kind_)) return EcnFile(ctx, *s).path();
  if (const auto* s = std::get_if<TosSetting>(&kind_)) return TosFileOf(ctx, *s).path();
  if (const auto* s = std::get_if<TcSetting>(&kind_)) return TcFile(ctx, *s).path();
  return "";
}

StatusOr<std::string> QosSetting::Read(const QosSettingContext& ctx) const {
  return std::visit([&](const auto& s) { return ReadOf(ctx, s); }, kind_);
}

Status QosSetting::Write(const QosSettingContext& ctx, const std::string& value) const {
  const std::string what = "set " + Key() + " to " + value;
  return std::visit([&](const auto& s) { return WriteOf(ctx, s, value, what); }, kind_);
}

std::vector<std::pair<QosSetting, std::string>> QosSettingsFor(const QosPolicy& qos,
                                                               const std::string& pf,
                                                               const std::string& dev,
                                                               const std::vector<uint32_t>& ports) {
  std::vector<std::pair<QosSetting, std::string>> out;
  if (!pf.empty()) {
    if (qos.trust) out.emplace_back(TrustSetting{pf}, *qos.trust);
    for (auto p : qos.pfc) out.emplace_back(PfcSetting{pf, p}, "on");
    for (auto [d, p] : qos.dscp_to_priority) out.emplace_back(AppSetting{pf, d}, std::to_string(p));
    for (auto p : qos.ecn) {
      out.emplace_back(EcnSetting{pf, EcnPoint::kRp, p}, "1");
      out.emplace_back(EcnSetting{pf, EcnPoint::kNp, p}, "1");
    }
  }
  for (auto port : ports) {
    if (qos.roce_tos) out.emplace_back(TosSetting{dev, port}, std::to_string(*qos.roce_tos));
    if (qos.traffic_class) out.emplace_back(TcSetting{dev, port}, std::to_string(*qos.traffic_class));
  }
  return out;
}

}  // namespace rdmak8s
