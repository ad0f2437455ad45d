#include "cni/netconf.h"

#include <exception>

#include "cni/dra_device.h"
#include "rdmak8s/json_reader.h"
#include "rdmak8s/numbers.h"

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

// The netconf's fields through the one strict reader (rdmak8s/json_reader.h): every message is
// "$.<field>: <what>" ("$.port: not a number (string)"), the path from the netconf's root, and
// reaches the runtime as the CNI error's msg.
struct Reader {
  CniError* err;
  bool ok = true;

  void Fail(std::string msg) {
    if (!ok) return;
    ok = false;
    *err = CniError{kErrInvalidConfig, std::move(msg), ""};
  }
  void Fail(const Status& s) { Fail(std::string(s.message())); }

  std::string String(const json& j, const char* key, std::string_view where = "$") {
    StatusOr<std::string> v = json_reader::StringAt(j, where, key);
    if (!v.ok()) {
      Fail(v.status());
      return "";
    }
    return *v;
  }
  std::optional<long> Int(const json& j, const char* key, long lo, long hi,
                          std::string_view where = "$") {
    if (!j.contains(key) || j[key].is_null()) return std::nullopt;
    StatusOr<int64_t> v = json_reader::IntAt(j, where, key, 0);
    if (!v.ok()) {
      Fail(v.status());
      return std::nullopt;
    }
    if (*v < lo || *v > hi) {
      Fail(json_reader::Invalid(json_reader::Field(where, key),
                                "must be an integer in " + std::to_string(lo) + ".." +
                                    std::to_string(hi) + ", not " + std::to_string(*v)));
      return std::nullopt;
    }
    return static_cast<long>(*v);
  }
  bool Bool(const json& j, const char* key, bool dflt, std::string_view where = "$") {
    StatusOr<bool> v = json_reader::BoolAt(j, where, key, dflt);
    if (!v.ok()) {
      Fail(v.status());
      return dflt;
    }
    return *v;
  }
};

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

std::optional<NetConf> Parse(std::string_view data, Command command, CniError* err) {
  // The one reader: its error names the syntax error, or nesting past json_reader::kMaxDepth
  // (libcni refuses past 10,000 before the plugin runs; a runtime that execs us directly may not).
  StatusOr<json> parsed = json_reader::Parse(data, "network configuration on stdin");
  if (!parsed.ok()) {
    *err = CniError{kErrDecode, parsed.status().message(), ""};
    return std::nullopt;
  }
  json& j = *parsed;
  if (!j.is_object()) {
    *err = CniError{kErrDecode, "network configuration on stdin is not a JSON object", ""};
    return std::nullopt;
  }
  Reader r{err};
  NetConf c;
  c.raw = j;
  c.cni_version = r.String(j, "cniVersion");
  if (!r.ok) return std::nullopt;
  if (c.cni_version.empty()) {
    *err = CniError{kErrIncompatibleVersion, "network configuration has no \"cniVersion\"", ""};
    return std::nullopt;
  }
  if (!IsSupportedVersion(c.cni_version)) {
    *err = CniError{kErrIncompatibleVersion,
                    "incompatible CNI versions: config is \"" + c.cni_version +
                        "\", plugin supports [0.3.0 0.3.1 0.4.0 1.0.0 1.1.0]",
                    ""};
    return std::nullopt;
  }
  c.name = r.String(j, "name");
  c.type = r.String(j, "type");
  if (r.ok && !ValidNetworkName(c.name)) {
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
  if (r.ok && !c.dra_request.empty() && !ValidDraRequest(c.dra_request)) {
    if (command == Command::kDel) {
      c.dra_request.clear();  // DEL undoes what the record says and never selects a device
    } else {
      r.Fail("$.draRequest: \"" + c.dra_request + "\" is not a DRA request name: \"<request>\", " +
             "\"<request>/<subrequest>\" or \"<claim>/<request>\", each part of [a-z0-9.-]");
    }
  }
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
  if (r.ok && !c.netns_mode.empty() && c.netns_mode != "shared" && c.netns_mode != "exclusive") {
    r.Fail("$.netnsMode: must be \"shared\" or \"exclusive\", not \"" + c.netns_mode + "\"");
  }
  // Host paths must be absolute: a relative one would resolve against whatever directory the
  // runtime happens to exec the plugin in.
  auto path = [&](const char* key) {
    std::string v = r.String(j, key);
    if (r.ok && !v.empty() && v[0] != '/') {
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

  // DEL must be permissive (SPEC.md: it should not fail on what it does not need): a malformed
  // qos or prevResult is ignored there (DEL undoes what the record says), an error elsewhere.
  CniError del_err;
  Reader lenient{&del_err};
  Reader& qr = command == Command::kDel ? lenient : r;
  if (j.contains("qos")) {
    StatusOr<QosPolicy> qos = ParseQosPolicy(j["qos"]);
    if (qos.ok()) c.qos = std::move(*qos);
    else qr.Fail(qos.status().message());
  }
  if (j.contains("prevResult") && !j["prevResult"].is_null()) {
    if (!j["prevResult"].is_object()) qr.Fail(json_reader::NotA("$.prevResult", "an object", j["prevResult"]));
    else c.prev_result = j["prevResult"];
  }
  if (!lenient.ok) {
    c.qos = QosPolicy{};
    c.prev_result.reset();
  }
  // GC without the list is malformed, not "nothing is live": read so, it would release every
  // attachment of the network (SPEC.md 1.1.0 makes the runtime send it, [] when none is valid).
  if (command == Command::kGc && CompareVersions(c.cni_version, "1.1.0") >= 0) {  // (older: refused)
    const json va = j.contains("cni.dev/valid-attachments") ? j["cni.dev/valid-attachments"] : json();
    if (!va.is_array()) {
      r.Fail(std::string("$.cni.dev/valid-attachments: GC needs an array of {containerID, ifname} ") +
             (j.contains("cni.dev/valid-attachments") ? "(it is " + va.dump() + ")" : "(it is missing)") +
             ": nothing released");
    } else {
      for (const auto& a : va) {
        if (!a.is_object() || !a.contains("containerID") || !a["containerID"].is_string() ||
            !a.contains("ifname") || !a["ifname"].is_string()) {
          r.Fail("$.cni.dev/valid-attachments: each entry needs string containerID and ifname");
          break;
        }
        c.valid_attachments.push_back(
            {a["containerID"].get<std::string>(), a["ifname"].get<std::string>()});
      }
    }
  }
  if (!r.ok) return std::nullopt;
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
