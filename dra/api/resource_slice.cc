#include "dra/api/resource_slice.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "rdmak8s/base/json_reader.h"

namespace rdmak8s::dra {
namespace {

using nlohmann::json;

bool IsCIdentifier(std::string_view s) {
  if (s.empty() || s.size() > kMaxIdLength) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alpha(c) || (c >= '0' && c <= '9'); });
}

bool IsDnsSubdomain(std::string_view s, size_t max_len) {
  if (s.empty() || s.size() > max_len) return false;
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (!IsDnsLabel(label)) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

json EncodeAttribute(const AttributeValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return json{{"int", *i}};
  if (const auto* b = std::get_if<bool>(&v)) return json{{"bool", *b}};
  return json{{"string", std::get<std::string>(v)}};
}

// The part of a device both versions share; v1 puts it on the device, v1beta1 under "basic".
json EncodeDeviceBody(const SliceDevice& d) {
  json body = json::object();
  if (!d.attributes.empty()) {
    json attrs = json::object();
    for (const auto& [name, value] : d.attributes) attrs[name] = EncodeAttribute(value);
    body["attributes"] = std::move(attrs);
  }
  if (!d.capacity.empty()) {
    json caps = json::object();
    for (const auto& [name, c] : d.capacity) {
      json cap = {{"value", c.value}};
      if (c.request_default) {
        cap["requestPolicy"] = {{"default", *c.request_default}, {"validRange", {{"min", *c.request_default}}}};
      }
      caps[name] = std::move(cap);
    }
    body["capacity"] = std::move(caps);
  }
  if (d.allow_multiple_allocations) body["allowMultipleAllocations"] = true;
  if (!d.taints.empty()) {
    json taints = json::array();
    for (const auto& t : d.taints) {
      json taint = {{"key", t.key}, {"effect", t.effect}};
      if (!t.value.empty()) taint["value"] = t.value;
      taints.push_back(std::move(taint));
    }
    body["taints"] = std::move(taints);
  }
  if (d.binds_to_node) body["bindsToNode"] = true;
  if (!d.binding_conditions.empty()) body["bindingConditions"] = d.binding_conditions;
  if (!d.binding_failure_conditions.empty()) body["bindingFailureConditions"] = d.binding_failure_conditions;
  return body;
}

// One device of a slice at `path` ("$.spec.devices[3]"), through checked reads: a field of
// the wrong type is an error naming its path, never an exception.
StatusOr<SliceDevice> DecodeDevice(const json& device, const std::string& path, ResourceApiVersion version) {
  using namespace json_reader;
  SliceDevice d;
  RDMAK8S_ASSIGN_OR_RETURN(d.name, StringAt(device, path, "name", /*required=*/true));
  const json* body = &device;
  std::string body_path = path;
  if (version == ResourceApiVersion::kV1beta1) {
    RDMAK8S_ASSIGN_OR_RETURN(const json* basic, ObjectAt(device, path, "basic"));
    static const json kEmpty = json::object();
    body = basic ? basic : &kEmpty;
    body_path = Field(path, "basic");
  }
  RDMAK8S_ASSIGN_OR_RETURN(const json* attrs, ObjectAt(*body, body_path, "attributes"));
  if (attrs) {
    for (const auto& [name, v] : attrs->items()) {
      const std::string at = Field(Field(body_path, "attributes"), name);
      RDMAK8S_RETURN_IF_ERROR(RequireObject(v, at));
      if (v.contains("int")) {
        RDMAK8S_ASSIGN_OR_RETURN(d.attributes[name], IntAt(v, at, "int", 0));
      } else if (v.contains("bool")) {
        RDMAK8S_ASSIGN_OR_RETURN(d.attributes[name], BoolAt(v, at, "bool", false));
      } else if (v.contains("string")) {
        RDMAK8S_ASSIGN_OR_RETURN(d.attributes[name], StringAt(v, at, "string"));
      } else if (v.contains("version")) {
        RDMAK8S_ASSIGN_OR_RETURN(d.attributes[name], StringAt(v, at, "version"));
      }
    }
  }
  RDMAK8S_ASSIGN_OR_RETURN(const json* caps, ObjectAt(*body, body_path, "capacity"));
  if (caps) {
    for (const auto& [name, c] : caps->items()) {
      const std::string at = Field(Field(body_path, "capacity"), name);
      DeviceCapacity cap;
      RDMAK8S_ASSIGN_OR_RETURN(cap.value, StringAt(c, at, "value", /*required=*/true));
      RDMAK8S_ASSIGN_OR_RETURN(const json* policy, ObjectAt(c, at, "requestPolicy"));
      if (policy && policy->contains("default")) {
        RDMAK8S_ASSIGN_OR_RETURN(cap.request_default, StringAt(*policy, Field(at, "requestPolicy"), "default"));
      }
      d.capacity[name] = std::move(cap);
    }
  }
  RDMAK8S_ASSIGN_OR_RETURN(d.allow_multiple_allocations, BoolAt(*body, body_path, "allowMultipleAllocations", false));
  RDMAK8S_ASSIGN_OR_RETURN(const json* taints, ArrayAt(*body, body_path, "taints"));
  if (taints) {
    for (size_t i = 0; i < taints->size(); ++i) {
      const std::string at = Index(Field(body_path, "taints"), i);
      DeviceTaint t;
      RDMAK8S_ASSIGN_OR_RETURN(t.key, StringAt((*taints)[i], at, "key", /*required=*/true));
      RDMAK8S_ASSIGN_OR_RETURN(t.value, StringAt((*taints)[i], at, "value"));
      RDMAK8S_ASSIGN_OR_RETURN(t.effect, StringAt((*taints)[i], at, "effect", /*required=*/true));
      d.taints.push_back(std::move(t));
    }
  }
  RDMAK8S_ASSIGN_OR_RETURN(d.binds_to_node, BoolAt(*body, body_path, "bindsToNode", false));
  for (auto [field, out] : {std::pair{"bindingConditions", &d.binding_conditions},
                            std::pair{"bindingFailureConditions", &d.binding_failure_conditions}}) {
    RDMAK8S_ASSIGN_OR_RETURN(const json* list, ArrayAt(*body, body_path, field));
    if (list) {
      RDMAK8S_ASSIGN_OR_RETURN(*out, StringList(*list, Field(body_path, field)));
    }
  }
  return d;
}

}  // namespace

std::string_view ResourceApiVersionName(ResourceApiVersion v) {
  return v == ResourceApiVersion::kV1 ? "v1" : "v1beta1";
}

bool IsDnsLabel(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || c == '-'; });
}

bool IsValidQualifiedName(std::string_view name) {
  size_t slash = name.find('/');
  if (slash == std::string_view::npos) return IsCIdentifier(name);
  return IsDnsSubdomain(name.substr(0, slash), kMaxDomainLength) && IsCIdentifier(name.substr(slash + 1));
}

size_t MaxDevicesPerSlice(const std::vector<SliceDevice>& devices) {
  bool tainted = std::any_of(devices.begin(), devices.end(), [](const SliceDevice& d) { return !d.taints.empty(); });
  return tainted ? kMaxDevicesPerSliceWithTaints : kMaxDevicesPerSlice;
}

std::vector<ResourceSlice> SplitPool(const std::vector<SliceDevice>& devices,
                                     const std::string& name_prefix, const std::string& driver,
                                     const std::string& node_name, int64_t generation) {
  const size_t per_slice = MaxDevicesPerSlice(devices);
  const size_t count = std::max<size_t>(1, (devices.size() + per_slice - 1) / per_slice);
  std::vector<ResourceSlice> slices(count);
  for (size_t i = 0; i < count; ++i) {
    ResourceSlice& s = slices[i];
    s.name = name_prefix + "-" + std::to_string(i);
    s.driver = driver;
    s.node_name = node_name;
    s.pool_name = node_name;
    s.pool_generation = generation;
    s.pool_slice_count = static_cast<int64_t>(count);
    size_t begin = i * per_slice;
    size_t end = std::min(devices.size(), begin + per_slice);
    if (begin < end) s.devices.assign(devices.begin() + begin, devices.begin() + end);
  }
  return slices;
}

nlohmann::json EncodeResourceSlice(const ResourceSlice& slice, ResourceApiVersion version) {
  json devices = json::array();
  for (const auto& d : slice.devices) {
    json body = EncodeDeviceBody(d);
    if (version == ResourceApiVersion::kV1) {
      body["name"] = d.name;
      devices.push_back(std::move(body));
    } else {
      devices.push_back(json{{"name", d.name}, {"basic", std::move(body)}});
    }
  }
  json metadata = {{"name", slice.name}};
  if (!slice.resource_version.empty()) metadata["resourceVersion"] = slice.resource_version;
  if (!slice.owner_node_uid.empty()) {
    metadata["ownerReferences"] = json::array({{{"apiVersion", "v1"},
                                                {"kind", "Node"},
                                                {"name", slice.node_name},
                                                {"uid", slice.owner_node_uid},
                                                {"controller", true}}});
  }
  return json{
      {"apiVersion", "resource.k8s.io/" + std::string(ResourceApiVersionName(version))},
      {"kind", "ResourceSlice"},
      {"metadata", std::move(metadata)},
      {"spec",
       {{"driver", slice.driver},
        {"nodeName", slice.node_name},
        {"pool",
         {{"name", slice.pool_name},
          {"generation", slice.pool_generation},
          {"resourceSliceCount", slice.pool_slice_count}}},
        {"devices", std::move(devices)}}},
  };
}

StatusOr<ResourceSlice> DecodeResourceSlice(const nlohmann::json& object, ResourceApiVersion version) {
  return DecodeResourceSliceAt(object, "$", version);
}

StatusOr<ResourceSlice> DecodeResourceSliceAt(const nlohmann::json& object, const std::string& path,
                                              ResourceApiVersion version) {
  using namespace json_reader;
  ResourceSlice s;
  auto decode = [&]() -> Status {
    RDMAK8S_ASSIGN_OR_RETURN(const json* meta, ObjectAt(object, path, "metadata"));
    if (!meta) return InvalidArgumentError(Field(path, "metadata") + ": missing");
    const std::string meta_path = Field(path, "metadata");
    RDMAK8S_ASSIGN_OR_RETURN(s.name, StringAt(*meta, meta_path, "name", /*required=*/true));
    RDMAK8S_ASSIGN_OR_RETURN(s.resource_version, StringAt(*meta, meta_path, "resourceVersion"));
    RDMAK8S_ASSIGN_OR_RETURN(const json* refs, ArrayAt(*meta, meta_path, "ownerReferences"));
    if (refs) {
      for (size_t i = 0; i < refs->size(); ++i) {
        const std::string at = Index(Field(meta_path, "ownerReferences"), i);
        RDMAK8S_ASSIGN_OR_RETURN(std::string kind, StringAt((*refs)[i], at, "kind"));
        if (kind == "Node") {
          RDMAK8S_ASSIGN_OR_RETURN(s.owner_node_uid, StringAt((*refs)[i], at, "uid"));
        }
      }
    }
    RDMAK8S_ASSIGN_OR_RETURN(const json* spec, ObjectAt(object, path, "spec"));
    if (!spec) return InvalidArgumentError(Field(path, "spec") + ": missing");
    const std::string spec_path = Field(path, "spec");
    RDMAK8S_ASSIGN_OR_RETURN(s.driver, StringAt(*spec, spec_path, "driver", /*required=*/true));
    RDMAK8S_ASSIGN_OR_RETURN(s.node_name, StringAt(*spec, spec_path, "nodeName"));
    RDMAK8S_ASSIGN_OR_RETURN(const json* pool, ObjectAt(*spec, spec_path, "pool"));
    if (!pool) return InvalidArgumentError(Field(spec_path, "pool") + ": missing");
    const std::string pool_path = Field(spec_path, "pool");
    RDMAK8S_ASSIGN_OR_RETURN(s.pool_name, StringAt(*pool, pool_path, "name", /*required=*/true));
    RDMAK8S_ASSIGN_OR_RETURN(s.pool_generation, IntAt(*pool, pool_path, "generation", 0));
    RDMAK8S_ASSIGN_OR_RETURN(s.pool_slice_count, IntAt(*pool, pool_path, "resourceSliceCount", 1));
    RDMAK8S_ASSIGN_OR_RETURN(const json* devices, ArrayAt(*spec, spec_path, "devices"));
    if (devices) {
      for (size_t i = 0; i < devices->size(); ++i) {
        RDMAK8S_ASSIGN_OR_RETURN(SliceDevice d,
                                 DecodeDevice((*devices)[i], Index(Field(spec_path, "devices"), i), version));
        s.devices.push_back(std::move(d));
      }
    }
    return Status::Ok();
  };
  RDMAK8S_RETURN_IF_ERROR_CTX(decode(), "decode ResourceSlice");
  return s;
}

}  // namespace rdmak8s::dra
