#include "cni/qos_settings.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "rdmak8s/file_util.h"
#include "rdmak8s/numbers.h"
#include "rdmak8s/sysfs_attr.h"

namespace rdmak8s::cni {

namespace {

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t c = s.find(':', start);
    out.push_back(s.substr(start, c == std::string::npos ? std::string::npos : c - start));
    if (c == std::string::npos) break;
    start = c + 1;
  }
  return out;
}

// Knob files are opened beneath their root (sysfs or configfs): a link out of it (a tree that
// is not the kernel's, a netdev name with "..") fails instead of truncating a file elsewhere.
struct QosSettingFile {
  std::string root;
  std::string rel;
  std::string path() const { return root + "/" + rel; }
};

// A number inside a knob ID or value (the priority of "pfc:<pf>:<prio>", the DSCP of
// "app:<pf>:<dscp>", an app entry's priority) no larger than `max`. IDs come back from the state
// record on disk: a bad one is an error naming `what`, never a shift past the PFC mask's width.
StatusOr<unsigned> QosSettingNumber(const std::string& text, unsigned max, const std::string& what) {
  RDMAK8S_ASSIGN_OR_RETURN(uint64_t v, ParseUnsignedInRange(text, what, 0, max));
  return static_cast<unsigned>(v);
}

StatusOr<std::string> ReadText(const QosSettingFile& f) { return ReadSysfsAttrBeneath(f.root, f.rel); }

Status WriteText(const QosSettingFile& f, const std::string& value) {
  auto fd = OpenBeneath(f.root, f.rel, O_WRONLY | O_TRUNC);
  if (!fd.ok()) return fd.status().Prepend("write " + value);
  std::string v = value + "\n";
  ssize_t n = write(*fd, v.data(), v.size());
  int e = errno;
  close(*fd);
  if (n < 0) return ErrnoError(e, "write " + value + " to " + f.path());
  return Status::Ok();
}

Status Unsupported(const std::string& what) { return UnimplementedError(what + ": not supported here"); }

QosSettingFile EcnPath(const QosSettingContext& ctx, const std::vector<std::string>& p) {
  return {ctx.sysfs_root, "class/net/" + p[1] + "/ecn/roce_" + p[2] + "/enable/" + p[3]};
}
QosSettingFile TcPath(const QosSettingContext& ctx, const std::vector<std::string>& p) {
  return {ctx.dev_sysfs_root, "class/infiniband/" + p[1] + "/tc/" + p[2] + "/traffic_class"};
}

// rdma_cm configfs: mkdir <root>/rdma_cm/<dev> makes the kernel create the device's group with
// ports/<n>/default_roce_tos (drivers/infiniband/core/cma_configfs.c).
StatusOr<QosSettingFile> TosPath(const QosSettingContext& ctx, const std::vector<std::string>& p) {
  const std::string cm = ctx.configfs_root + "/rdma_cm";
  auto dir = OpenBeneath(ctx.configfs_root, "rdma_cm", O_PATH | O_DIRECTORY);
  if (!dir.ok()) {
    if (dir.status().code() == StatusCode::kNotFound) return Unsupported("rdma_cm configfs (" + cm + ")");
    return dir.status();
  }
  int rc = mkdirat(*dir, p[1].c_str(), 0755);
  int e = errno;
  close(*dir);
  if (rc != 0 && e != EEXIST) return ErrnoError(e, "mkdir " + cm + "/" + p[1]);
  return QosSettingFile{ctx.configfs_root, "rdma_cm/" + p[1] + "/ports/" + p[2] + "/default_roce_tos"};
}

Status MapDcb(const Status& s) { return s; }

}  // namespace

std::map<std::string, std::string> RequiredQosSettings(const QosPolicy& qos, const std::string& pf,
                                                 const std::string& dev,
                                                 const std::vector<uint32_t>& ports) {
  std::map<std::string, std::string> k;
  if (!pf.empty()) {
    if (qos.trust) k["trust:" + pf] = *qos.trust;
    for (auto p : qos.pfc) k["pfc:" + pf + ":" + std::to_string(p)] = "on";
    for (auto [d, p] : qos.dscp_to_priority) k["app:" + pf + ":" + std::to_string(d)] = std::to_string(p);
    for (auto p : qos.ecn) {
      k["ecn:" + pf + ":rp:" + std::to_string(p)] = "1";
      k["ecn:" + pf + ":np:" + std::to_string(p)] = "1";
    }
  }
  for (auto port : ports) {
    if (qos.roce_tos) k["tos:" + dev + ":" + std::to_string(port)] = std::to_string(*qos.roce_tos);
    if (qos.traffic_class) k["tc:" + dev + ":" + std::to_string(port)] = std::to_string(*qos.traffic_class);
  }
  return k;
}

bool IsNodeWideQosSetting(const std::string& id) {
  return id.rfind("trust:", 0) == 0 || id.rfind("pfc:", 0) == 0 || id.rfind("app:", 0) == 0 ||
         id.rfind("ecn:", 0) == 0;
}

bool IsDcbQosSetting(const std::string& id) {
  return id.rfind("trust:", 0) == 0 || id.rfind("pfc:", 0) == 0 || id.rfind("app:", 0) == 0;
}

StatusOr<std::string> ReadQosSetting(const QosSettingContext& ctx, const std::string& id) {
  auto p = Split(id);
  const std::string& kind = p[0];
  if (kind == "trust" && p.size() == 2) {
    if (ctx.dcb == nullptr) return Unsupported("DCB on " + p[1]);
    RDMAK8S_ASSIGN_OR_RETURN(DcbTrust t, ctx.dcb->GetTrust(p[1]));
    return std::string(t == DcbTrust::kDscp ? "dscp" : "pcp");
  }
  if (kind == "pfc" && p.size() == 3) {
    if (ctx.dcb == nullptr) return Unsupported("DCB on " + p[1]);
    RDMAK8S_ASSIGN_OR_RETURN(unsigned prio, QosSettingNumber(p[2], 7, "knob " + id));
    RDMAK8S_ASSIGN_OR_RETURN(PfcState s, ctx.dcb->GetPfc(p[1]));
    return std::string((s.enabled >> prio) & 1 ? "on" : "off");
  }
  if (kind == "app" && p.size() == 3) {
    if (ctx.dcb == nullptr) return Unsupported("DCB on " + p[1]);
    RDMAK8S_ASSIGN_OR_RETURN(unsigned dscp, QosSettingNumber(p[2], 63, "knob " + id));
    RDMAK8S_ASSIGN_OR_RETURN(auto app, ctx.dcb->GetApp(p[1]));
    for (const auto& e : app) {
      if (e.selector == kDcbAppSelDscp && e.protocol == dscp) return std::to_string(e.priority);
    }
    return std::string("none");
  }
  if (kind == "ecn" && p.size() == 4) {
    auto v = ReadText(EcnPath(ctx, p));
    if (!v.ok() && v.status().code() == StatusCode::kNotFound) {
      return Unsupported("ECN knob " + EcnPath(ctx, p).path());
    }
    return v;
  }
  if (kind == "tos" && p.size() == 3) {
    RDMAK8S_ASSIGN_OR_RETURN(QosSettingFile f, TosPath(ctx, p));
    auto v = ReadText(f);
    if (!v.ok() && v.status().code() == StatusCode::kNotFound) return Unsupported("RoCE ToS " + f.path());
    return v;
  }
  if (kind == "tc" && p.size() == 3) {
    auto v = ReadText(TcPath(ctx, p));
    if (!v.ok() && v.status().code() == StatusCode::kNotFound) {
      return Unsupported("traffic class " + TcPath(ctx, p).path());
    }
    return v;
  }
  return InvalidArgumentError("unknown knob " + id);
}

Status WriteQosSetting(const QosSettingContext& ctx, const std::string& id, const std::string& value) {
  auto p = Split(id);
  const std::string& kind = p[0];
  const std::string what = "set " + id + " to " + value;
  if (kind == "trust" && p.size() == 2) {
    if (ctx.dcb == nullptr) return Unsupported("DCB on " + p[1]);
    return ctx.dcb->SetTrust(p[1], value == "dscp" ? DcbTrust::kDscp : DcbTrust::kPcp).Prepend(what);
  }
  if (kind == "pfc" && p.size() == 3) {
    if (ctx.dcb == nullptr) return Unsupported("DCB on " + p[1]);
    auto prio = QosSettingNumber(p[2], 7, what);
    if (!prio.ok()) return prio.status();
    auto s = ctx.dcb->GetPfc(p[1]);
    if (!s.ok()) return s.status().Prepend(what);
    uint8_t bit = static_cast<uint8_t>(1u << *prio);
    uint8_t mask = value == "on" ? (s->enabled | bit) : (s->enabled & ~bit);
    return MapDcb(ctx.dcb->SetPfcEnabled(p[1], mask)).Prepend(what);
  }
  if (kind == "app" && p.size() == 3) {
    if (ctx.dcb == nullptr) return Unsupported("DCB on " + p[1]);
    auto dscp = QosSettingNumber(p[2], 63, what);
    if (!dscp.ok()) return dscp.status();
    auto prio = value == "none" ? StatusOr<unsigned>(0u) : QosSettingNumber(value, 7, what);
    if (!prio.ok()) return prio.status();
    auto app = ctx.dcb->GetApp(p[1]);
    if (!app.ok()) return app.status().Prepend(what);
    std::vector<DcbAppEntry> stale;
    for (const auto& e : *app) {
      if (e.selector == kDcbAppSelDscp && e.protocol == *dscp) stale.push_back(e);
    }
    if (!stale.empty()) RDMAK8S_RETURN_IF_ERROR_CTX(ctx.dcb->DelApp(p[1], stale), what);
    if (value == "none") return Status::Ok();
    DcbAppEntry e;
    e.selector = kDcbAppSelDscp;
    e.protocol = static_cast<uint16_t>(*dscp);
    e.priority = static_cast<uint8_t>(*prio);
    return ctx.dcb->AddApp(p[1], {e}).Prepend(what);
  }
  if (kind == "ecn" && p.size() == 4) return WriteText(EcnPath(ctx, p), value);
  if (kind == "tos" && p.size() == 3) {
    RDMAK8S_ASSIGN_OR_RETURN(QosSettingFile f, TosPath(ctx, p));
    return WriteText(f, value);
  }
  if (kind == "tc" && p.size() == 3) return WriteText(TcPath(ctx, p), value);
  return InvalidArgumentError("unknown knob " + id);
}

}  // namespace rdmak8s::cni
