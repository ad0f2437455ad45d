#include "cni/netconf.h"

#include <exception>

#include "cni/dra_device.h"
#include "rdmak8s/base/json_field_reader.h"
#include "rdmak8s/base/json_reader.h"
#include "rdmak8s/base/numbers.h"

namespace rdmak8s::cni {

using nlohmann::json;

std::optional<LogLevel> ParseLogLevel(std::string_view level) {
  if (level == "info") return LogLevel::kInfo;
  if (level == "error") return LogLevel::kError;
  if (level == "warning" || level == "warn") return LogLevel::kWarning;
  if (level == "debug") return LogLevel::kDebug;
  return std::nullopt;
}

std::string PeekCniVersion(std::string_view stdin_data) {
  StatusOr<json> parsed = json_reader::Parse(stdin_data, "netconf");
  if (!parsed.ok()) return "";
  const json& j = *parsed;
  if (j.is_object() && j.contains("cniVersion") && j["cniVersion"].is_string()) {
    return j["cniVersion"].get<std::string>();
  }
  return "";
}

namespace {

// A PKey is hex, as IPoIB writes it (`ip link add ... type ipoib pkey 8001`, ib0.8001,
// /sys/class/infiniband/*/ports/*/pkeys/*): "8001" and "0x8001" are 0x8001, "0800" is 0x0800.
// Only a string: a JSON number would be read as decimal, and `"pkey": 8001` meaning 0x8001 is the
// mistake an IPoIB user makes.
std::optional<uint16_t> ParsePkey(const json& v) {
  if (!v.is_string()) return std::nullopt;
  std::string_view s = v.get_ref<const std::string&>();
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  if (s.size() > 4) return std::nullopt;
  StatusOr<uint16_t> n = ParseUnsigned<uint16_t>(s, "pkey", NumberBase::kHex);
  if (!n.ok() || (*n & 0x7fff) == 0) return std::nullopt;
  return *n;
}

using json_reader::FieldReader;

// The document: JSON, an object. kErrDecode otherwise.
std::optional<json> Decode(std::string_view data, CniError* err) {
  // The one reader: its error names the syntax error, or nesting past json_reader::kMaxDepth
  // (libcni refuses past 10,000 before the plugin runs; a runtime that execs us directly may not).
  StatusOr<json> parsed = json_reader::Parse(data, "network configuration on stdin");
  if (!parsed.ok()) {
    *err = CniError{kErrDecode, parsed.status().message(), ""};
    return std::nullopt;
  }
  if (!parsed->is_object()) {
    *err = CniError{kErrDecode, "network configuration on stdin is not a JSON object", ""};
    return std::nullopt;
  }
  return std::move(*parsed);
}

// cniVersion: present and one we speak (kErrIncompatibleVersion otherwise), or r's failure.
bool ReadVersion(const json& j, FieldReader& r, NetConf& c, CniError* err) {
  c.cni_version = r.String(j, "cniVersion");
  if (!r.ok()) return false;
  if (c.cni_version.empty()) {
    *err = CniError{kErrIncompatibleVersion, "network configuration has no \"cniVersion\"", ""};
    return false;
  }
  if (!IsSupportedVersion(c.cni_version)) {
    *err = CniError{kErrIncompatibleVersion,
                    "incompatible CNI versions: config is \"" + c.cni_version +
                        "\", plugin supports [0.3.0 0.3.1 0.4.0 1.0.0 1.1.0]",
                    ""};
    return false;
  }
  return true;
}

// Which network and which device: name, type, deviceID (runtimeConfig's wins), draRequest.
void ReadNetworkAndDevice(const json& j, Command command, FieldReader& r, NetConf& c) {
  c.name = r.String(j, "name");
  c.type = r.String(j, "type");
  if (r.ok() && !ValidNetworkName(c.name)) {
    r.Fail("$.name: invalid network name \"" + c.name + "\": must match [a-zA-Z0-9][a-zA-Z0-9_.-]*");
  }
  c.device_id = r.String(j, "deviceID");
  if (StatusOr<const json*> rc = json_reader::ObjectAt(j, "$", "runtimeConfig"); !rc.ok()) {
    r.Fail(rc.status());
  } else if (*rc != nullptr) {
    std::string rt = r.String(**rc, "deviceID", "$.runtimeConfig");
    if (!rt.empty()) c.device_id = rt;
  }
  c.dra_request = r.String(j, "draRequest");
  if (r.ok() && !c.dra_request.empty() && !ValidDraRequest(c.dra_request)) {
    if (command == Command::kDel) {
      c.dra_request.clear();  // DEL undoes what the record says and never selects a device
    } else {
      r.Fail("$.draRequest: \"" + c.dra_request + "\" is not a DRA request name: \"<request>\", " +
             "\"<request>/<subrequest>\" or \"<claim>/<request>\", each part of [a-z0-9.-]");
    }
  }
}

// How the device is attached: port, gidTimeoutMs, ensureIPv6Gid, pkey, netnsMode.
void ReadAttachment(const json& j, FieldReader& r, NetConf& c) {
  if (auto v = r.Int(j, "port", 1, 255)) c.port = static_cast<uint32_t>(*v);
  // An ADD blocks its runtime for this long: more than a minute is a mistake, not a wish.
  if (auto v = r.Int(j, "gidTimeoutMs", 0, 60000)) c.gid_timeout_ms = static_cast<int>(*v);
  c.ensure_ipv6_gid = r.Bool(j, "ensureIPv6Gid", false);
  if (j.contains("pkey")) {
    c.pkey = ParsePkey(j["pkey"]);
    if (!c.pkey) {
      r.Fail("$.pkey: " + j["pkey"].dump() + " is not a partition key: a string of 1 to 4 hex " +
             "digits, with or without 0x (\"8001\" is 0x8001): a 15-bit key 0x0001..0x7fff, " +
             "optionally with the full-member bit 0x8000 (the key 0, 0x0000 or 0x8000, is invalid)");
    }
  }
  c.netns_mode = r.String(j, "netnsMode");
  if (r.ok() && !c.netns_mode.empty() && c.netns_mode != "shared" && c.netns_mode != "exclusive") {
    r.Fail("$.netnsMode: must be \"shared\" or \"exclusive\", not \"" + c.netns_mode + "\"");
  }
}

// The node's paths and logging: sysfsRoot, configfsRoot, stateDir, logFile, logLevel.
void ReadHostPaths(const json& j, FieldReader& r, NetConf& c) {
  // Host paths must be absolute: a relative one would resolve against whatever directory the
  // runtime happens to exec the plugin in.
  auto path = [&](const char* key) {
    std::string v = r.String(j, key);
    if (r.ok() && !v.empty() && v[0] != '/') {
      r.Fail(json_reader::Field("$", key) + ": must be an absolute path, not \"" + v + "\"");
    }
    return v;
  };
  c.sysfs_root = path("sysfsRoot");
  c.configfs_root = path("configfsRoot");
  c.state_dir = path("stateDir");
  c.log_file = path("logFile");
  std::string level = r.String(j, "logLevel");
  if (!level.empty()) {
    c.log_level = ParseLogLevel(level);
    if (!c.log_level) r.Fail("$.logLevel: must be error, warning, info or debug, not \"" + level + "\"");
  }
}

// qos and prevResult. DEL must be permissive (SPEC.md: it should not fail on what it does not
// need): a malformed qos or prevResult is ignored there (DEL undoes what the record says), an
// error elsewhere.
void ReadQosAndPrevResult(const json& j, Command command, FieldReader& r, NetConf& c) {
  FieldReader lenient;
  FieldReader& qr = command == Command::kDel ? lenient : r;
  if (j.contains("qos")) {
    StatusOr<QosPolicy> qos = ParseQosPolicy(j["qos"]);
    if (qos.ok()) c.qos = std::move(*qos);
    else qr.Fail(qos.status().message());
  }
  if (j.contains("prevResult") && !j["prevResult"].is_null()) {
    if (!j["prevResult"].is_object()) qr.Fail(json_reader::NotA("$.prevResult", "an object", j["prevResult"]));
    else c.prev_result = j["prevResult"];
  }
  if (!lenient.ok()) {
    c.qos = QosPolicy{};
    c.prev_result.reset();
  }
}

// GC's cni.dev/valid-attachments. Without the list GC is malformed, not "nothing is live": read
// so, it would release every attachment of the network (SPEC.md 1.1.0 makes the runtime send
// it, [] when none is valid).
void ReadValidAttachments(const json& j, Command command, FieldReader& r, NetConf& c) {
  if (command != Command::kGc || CompareVersions(c.cni_version, "1.1.0") < 0) return;  // (older: refused)
  const json va = j.contains("cni.dev/valid-attachments") ? j["cni.dev/valid-attachments"] : json();
  if (!va.is_array()) {
    r.Fail(std::string("$.cni.dev/valid-attachments: GC needs an array of {containerID, ifname} ") +
           (j.contains("cni.dev/valid-attachments") ? "(it is " + va.dump() + ")" : "(it is missing)") +
           ": nothing released");
    return;
  }
  for (const auto& a : va) {
    if (!a.is_object() || !a.contains("containerID") || !a["containerID"].is_string() ||
        !a.contains("ifname") || !a["ifname"].is_string()) {
      r.Fail("$.cni.dev/valid-attachments: each entry needs string containerID and ifname");
      return;
    }
    c.valid_attachments.push_back({a["containerID"].get<std::string>(), a["ifname"].get<std::string>()});
  }
}

std::optional<NetConf> Parse(std::string_view data, Command command, CniError* err) {
  std::optional<json> j = Decode(data, err);
  if (!j) return std::nullopt;
  // The fields through the one strict reader (rdmak8s/base/json_field_reader.h): every message is
  // "$.<field>: <what>" ("$.port: not a number (string)"), the path from the netconf's root,
  // and reaches the runtime as the CNI error's msg.
  FieldReader r("$");
  auto invalid = [&]() -> std::optional<NetConf> {
    *err = CniError{kErrInvalidConfig, *r.error(), ""};
    return std::nullopt;
  };
  NetConf c;
  c.raw = *j;
  if (!ReadVersion(*j, r, c, err)) return r.ok() ? std::nullopt : invalid();
  ReadNetworkAndDevice(*j, command, r, c);
  ReadAttachment(*j, r, c);
  ReadHostPaths(*j, r, c);
  ReadQosAndPrevResult(*j, command, r, c);
  ReadValidAttachments(*j, command, r, c);
  if (!r.ok()) return invalid();
  return c;
}

}  // namespace

std::optional<NetConf> ParseNetConf(std::string_view stdin_data, Command command, CniError* err) {
  try {
    return Parse(stdin_data, command, err);
  } catch (const std::exception& e) {  // nlohmann type errors we did not foresee
    *err = CniError{kErrInvalidConfig, std::string("network configuration: ") + e.what(), ""};
    return std::nullopt;
  }
}

}  // namespace rdmak8s::cni
