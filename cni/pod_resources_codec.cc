// Encoding and decoding of the pod-resources API bytes (cni/pod_resources_codec.h).
#include "cni/pod_resources_codec.h"

#include <cstdint>

namespace rdmak8s::cni {

namespace {

// Protobuf wire types (protobuf.dev/programming-guides/encoding).
enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLen = 2, kStartGroup = 3, kEndGroup = 4, kFixed32 = 5 };

// A reader over one message's bytes. Every error names `what` (the message being read).
class Reader {
 public:
  Reader(std::string_view bytes, std::string what) : b_(bytes), what_(std::move(what)) {}
  bool done() const { return b_.empty(); }

  StatusOr<uint64_t> Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (b_.empty()) return Bad("truncated varint");
      const auto byte = static_cast<uint8_t>(b_.front());
      b_.remove_prefix(1);
      v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return v;
    }
    return Bad("varint longer than 10 bytes");
  }
  // The next field's number and wire type.
  Status Tag(uint32_t* field, uint32_t* type) {
    RDMAK8S_ASSIGN_OR_RETURN(uint64_t tag, Varint());
    *field = static_cast<uint32_t>(tag >> 3);
    *type = static_cast<uint32_t>(tag & 7);
    if (*field == 0 || tag >> 3 > 0x1fffffff) return Bad("field number " + std::to_string(tag >> 3));
    return Status::Ok();
  }
  StatusOr<std::string_view> Bytes() {
    RDMAK8S_ASSIGN_OR_RETURN(uint64_t n, Varint());
    if (n > b_.size()) {
      return Bad("length " + std::to_string(n) + " past the end (" + std::to_string(b_.size()) + " bytes left)");
    }
    std::string_view out = b_.substr(0, n);
    b_.remove_prefix(n);
    return out;
  }
  // Skips a field this reader does not use.
  Status Skip(uint32_t field, uint32_t type) {
    size_t n = 0;
    switch (type) {
      case kVarint: return Varint().status();
      case kLen: return Bytes().status();
      case kFixed64: n = 8; break;
      case kFixed32: n = 4; break;
      default: return Bad("field " + std::to_string(field) + " has wire type " + std::to_string(type) +
                          " (groups are not used by this API)");
    }
    if (b_.size() < n) return Bad("truncated field " + std::to_string(field));
    b_.remove_prefix(n);
    return Status::Ok();
  }
  // A string field (`name`) of wire type LEN, at most `max` bytes, into *out.
  Status String(uint32_t type, const char* name, size_t max, std::string* out) {
    if (type != kLen) return Bad(std::string(name) + " has wire type " + std::to_string(type) + ", not LEN");
    RDMAK8S_ASSIGN_OR_RETURN(std::string_view s, Bytes());
    if (s.size() > max) {
      return Bad(std::string(name) + " is " + std::to_string(s.size()) + " bytes, more than " +
                 std::to_string(max));
    }
    out->assign(s);
    return Status::Ok();
  }
  // fn(field, type) for each field to the end of the message: fn reads its value or skips it.
  template <typename Fn>
  Status Fields(Fn&& fn) {
    while (!done()) {
      uint32_t field = 0, type = 0;
      RDMAK8S_RETURN_IF_ERROR(Tag(&field, &type));
      RDMAK8S_RETURN_IF_ERROR(fn(field, type));
    }
    return Status::Ok();
  }
  // An embedded message field (`name`) of wire type LEN.
  StatusOr<std::string_view> Message(uint32_t type, const char* name) {
    if (type != kLen) return Bad(std::string(name) + " has wire type " + std::to_string(type) + ", not LEN");
    return Bytes();
  }
  Status Bad(const std::string& why) const { return InvalidArgumentError(what_ + ": " + why); }

 private:
  std::string_view b_;
  std::string what_;
};

Status TooMany(const std::string& what, size_t max) {
  return InvalidArgumentError(what + ": more than " + std::to_string(max));
}

Status DecodeDevices(std::string_view bytes, const PodResourcesBounds& bounds, size_t* ids,
                     PodResourceDevices* out) {
  Reader r(bytes, "ContainerDevices");
  return r.Fields([&](uint32_t field, uint32_t type) -> Status {
    if (field == 1) return r.String(type, "resource_name", bounds.max_string_bytes, &out->resource_name);
    if (field != 2) return r.Skip(field, type);  // topology
    if (++*ids > bounds.max_device_ids) return TooMany("device IDs in the answer", bounds.max_device_ids);
    return r.String(type, "device_ids", bounds.max_string_bytes, &out->device_ids.emplace_back());
  });
}

Status DecodeContainer(std::string_view bytes, const PodResourcesBounds& bounds, size_t* ids,
                       PodResourceContainer* out) {
  Reader r(bytes, "ContainerResources");
  return r.Fields([&](uint32_t field, uint32_t type) -> Status {
    if (field == 1) return r.String(type, "name", bounds.max_string_bytes, &out->name);
    if (field != 2) return r.Skip(field, type);  // cpu_ids, memory, dynamic_resources
    RDMAK8S_ASSIGN_OR_RETURN(std::string_view m, r.Message(type, "devices"));
    return DecodeDevices(m, bounds, ids, &out->devices.emplace_back());
  });
}

Status DecodePod(std::string_view bytes, const PodResourcesBounds& bounds, size_t* ids,
                 PodResourcesEntry* out) {
  Reader r(bytes, "PodResources");
  return r.Fields([&](uint32_t field, uint32_t type) -> Status {
    if (field == 1) return r.String(type, "name", bounds.max_string_bytes, &out->name);
    if (field == 2) return r.String(type, "namespace", bounds.max_string_bytes, &out->pod_namespace);
    if (field != 3) return r.Skip(field, type);
    if (out->containers.size() == bounds.max_containers) {
      return TooMany("containers of pod " + out->pod_namespace + "/" + out->name, bounds.max_containers);
    }
    RDMAK8S_ASSIGN_OR_RETURN(std::string_view m, r.Message(type, "containers"));
    return DecodeContainer(m, bounds, ids, &out->containers.emplace_back());
  });
}

}  // namespace

std::string EncodeGrpcMessage(std::string_view message) {
  const auto n = static_cast<uint32_t>(message.size());
  std::string out;
  out.reserve(5 + message.size());
  out.push_back('\0');  // not compressed
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((n >> shift) & 0xff));
  out.append(message);
  return out;
}

StatusOr<std::string_view> DecodeGrpcMessage(std::string_view body, size_t max_bytes) {
  if (body.size() < 5) {
    return InvalidArgumentError("gRPC response body of " + std::to_string(body.size()) +
                                " bytes: not a whole message frame (5-byte prefix)");
  }
  if (body[0] != '\0') {
    return InvalidArgumentError("gRPC response message is compressed (flag " +
                                std::to_string(static_cast<uint8_t>(body[0])) + "), which was not asked for");
  }
  uint32_t n = 0;
  for (int i = 1; i < 5; ++i) n = (n << 8) | static_cast<uint8_t>(body[i]);
  if (n > max_bytes) {
    return InvalidArgumentError("gRPC response message of " + std::to_string(n) + " bytes, more than " +
                                std::to_string(max_bytes));
  }
  if (body.size() - 5 != n) {
    return InvalidArgumentError("gRPC response body holds " + std::to_string(body.size() - 5) +
                                " bytes after the prefix, which says " + std::to_string(n) +
                                " (one message expected)");
  }
  return body.substr(5);
}

std::string EncodeListPodResourcesRequest() { return {}; }

StatusOr<std::vector<PodResourcesEntry>> DecodeListPodResourcesResponse(std::string_view bytes,
                                                                        const PodResourcesBounds& bounds) {
  if (bytes.size() > bounds.max_message_bytes) {
    return TooMany("ListPodResourcesResponse bytes (" + std::to_string(bytes.size()) + ")",
                   bounds.max_message_bytes);
  }
  std::vector<PodResourcesEntry> pods;
  size_t ids = 0;
  Reader r(bytes, "ListPodResourcesResponse");
  RDMAK8S_RETURN_IF_ERROR(r.Fields([&](uint32_t field, uint32_t type) -> Status {
    if (field != 1) return r.Skip(field, type);
    if (pods.size() == bounds.max_pods) return TooMany("pods in the answer", bounds.max_pods);
    RDMAK8S_ASSIGN_OR_RETURN(std::string_view m, r.Message(type, "pod_resources"));
    return DecodePod(m, bounds, &ids, &pods.emplace_back());
  }));
  return pods;
}

std::optional<std::vector<std::string>> PodDeviceIds(const std::vector<PodResourcesEntry>& pods,
                                                     const std::string& pod_namespace,
                                                     const std::string& name) {
  for (const auto& p : pods) {
    if (p.pod_namespace != pod_namespace || p.name != name) continue;
    std::vector<std::string> ids;
    for (const auto& c : p.containers) {
      for (const auto& d : c.devices) ids.insert(ids.end(), d.device_ids.begin(), d.device_ids.end());
    }
    return ids;
  }
  return std::nullopt;
}

}  // namespace rdmak8s::cni
