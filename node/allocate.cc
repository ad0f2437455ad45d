#include "node/allocate.h"

#include <cctype>

#include <nlohmann/json.hpp>

#include "rdmak8s/base/json_reader.h"

namespace rdmak8s::node {

namespace {

void Add(std::vector<CharDeviceRef>& out, const CharDevice& c, const std::string& dev_root) {
  for (const auto& existing : out) {
    if (existing.name == c.name) return;
  }
  out.push_back({c.name, dev_root + "/infiniband/" + c.name, c.ContainerPath()});
}

}  // namespace

using nlohmann::json;
using json_reader::CheckKeys;
using json_reader::Invalid;
using json_reader::NotA;

std::vector<CharDeviceRef> CharDevicesFor(const RdmaDevice& dev, const AllocateOptions& options,
                                          const std::string& dev_root) {
  std::vector<CharDeviceRef> out;
  auto add_kind = [&](CharDeviceKind kind) {
    for (const auto& c : dev.char_devices) {
      if (c.kind == kind) Add(out, c, dev_root);
    }
  };
  add_kind(CharDeviceKind::kUverbs);
  switch (dev.transport) {
    case Transport::kIb:
      add_kind(CharDeviceKind::kUmad);
      if (options.issm) add_kind(CharDeviceKind::kIssm);
      break;
    case Transport::kRoce:
      if (options.roce_umad) add_kind(CharDeviceKind::kUmad);
      break;
    case Transport::kIwarp:
    case Transport::kUnknown:
      break;
  }
  add_kind(CharDeviceKind::kRdmaCm);
  return out;
}

std::map<std::string, std::string> AllocationEnv(const std::vector<const RdmaDevice*>& devs,
                                                 const AllocateOptions& options) {
  std::map<std::string, std::string> env = options.extra_env;
  std::string nccl, ucx;
  for (const RdmaDevice* dev : devs) {
    nccl += (nccl.empty() ? "=" : ",") + dev->name;
    for (const auto& port : dev->ports) {
      ucx += (ucx.empty() ? "" : ",") + dev->name + ":" + std::to_string(port.port_num);
    }
  }
  if (options.nccl_env) env["NCCL_IB_HCA"] = nccl;
  if (options.ucx_env) env["UCX_NET_DEVICES"] = ucx;
  return env;
}

namespace {

// `dra`: a claim's opaque parameters, which also take gidIndexEnv (it needs the CNI to fill in
// the claim's GID index spec, which only the DRA driver writes).
StatusOr<AllocateOptions> ParseAllocateKeys(const json& j, const std::string& path, bool dra) {
  RDMAK8S_RETURN_IF_ERROR(dra ? CheckKeys(j, path, {"ncclEnv", "ucxEnv", "issm", "roceUmad", "env", "gidIndexEnv"})
                              : CheckKeys(j, path, {"ncclEnv", "ucxEnv", "issm", "roceUmad", "env"}));
  AllocateOptions a;
  auto flag = [&](const char* key, bool& out) -> Status {
    RDMAK8S_ASSIGN_OR_RETURN(out, json_reader::BoolAt(j, path, key, out));
    return Status::Ok();
  };
  RDMAK8S_RETURN_IF_ERROR(flag("ncclEnv", a.nccl_env));
  RDMAK8S_RETURN_IF_ERROR(flag("ucxEnv", a.ucx_env));
  RDMAK8S_RETURN_IF_ERROR(flag("issm", a.issm));
  RDMAK8S_RETURN_IF_ERROR(flag("roceUmad", a.roce_umad));
  if (dra) RDMAK8S_RETURN_IF_ERROR(flag("gidIndexEnv", a.gid_index_env));
  RDMAK8S_ASSIGN_OR_RETURN(const json* e, json_reader::ObjectAt(j, path, "env"));
  if (e != nullptr) {
    for (auto it = e->begin(); it != e->end(); ++it) {
      std::string p = path + ".env." + it.key();
      if (!it.value().is_string()) return NotA(p, "a string", it.value());
      const std::string& k = it.key();
      bool ok = !k.empty() && !std::isdigit(static_cast<unsigned char>(k[0]));
      for (char c : k) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
      if (!ok) return Invalid(p, "is not a valid environment variable name");
      a.extra_env[k] = it.value().get<std::string>();
    }
  }
  return a;
}

}  // namespace

StatusOr<AllocateOptions> ParseAllocate(const json& j, const std::string& path) {
  return ParseAllocateKeys(j, path, /*dra=*/false);
}

StatusOr<AllocateOptions> ParseAllocateOptions(std::string_view json_text) {
  RDMAK8S_ASSIGN_OR_RETURN(const json j, json_reader::Parse(json_text, "$"));
  return ParseAllocateKeys(j, "$", /*dra=*/true);
}

}  // namespace rdmak8s::node
