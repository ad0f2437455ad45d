#include "dra/api/resource_slice.h"

#include <algorithm>

#include <nlohmann/json.hpp>

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
  return body;
}

// Throws nlohmann::json exceptions on wrong types; DecodeResourceSlice catches them.
SliceDevice DecodeDevice(const json& device, ResourceApiVersion version) {
  SliceDevice d;
  d.name = device.at("name").get<std::string>();
  const json& body = version == ResourceApiVersion::kV1beta1 ? device.value("basic", json::object()) : device;
  if (auto it = body.find("attributes"); it != body.end()) {
    for (const auto& [name, v] : it->items()) {
      if (v.contains("int")) d.attributes[name] = v.at("int").get<int64_t>();
      else if (v.contains("bool")) d.attributes[name] = v.at("bool").get<bool>();
      else if (v.contains("string")) d.attributes[name] = v.at("string").get<std::string>();
      else if (v.contains("version")) d.attributes[name] = v.at("version").get<std::string>();
    }
  }
  if (auto it = body.find("capacity"); it != body.end()) {
    for (const auto& [name, c] : it->items()) {
      DeviceCapacity cap;
      cap.value = c.at("value").get<std::string>();
      if (auto p = c.find("requestPolicy"); p != c.end() && p->contains("default")) {
        cap.request_default = p->at("default").get<std::string>();
      }
      d.capacity[name] = std::move(cap);
    }
  }
  d.allow_multiple_allocations = body.value("allowMultipleAllocations", false);
  if (auto it = body.find("taints"); it != body.end()) {
    for (const auto& t : *it) {
      d.taints.push_back({t.at("key").get<std::string>(), t.value("value", std::string()),
                          t.at("effect").get<std::string>()});
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
  try {
    ResourceSlice s;
    const json& meta = object.at("metadata");
    s.name = meta.at("name").get<std::string>();
    s.resource_version = meta.value("resourceVersion", std::string());
    for (const auto& ref : meta.value("ownerReferences", json::array())) {
      if (ref.value("kind", std::string()) == "Node") s.owner_node_uid = ref.value("uid", std::string());
    }
    const json& spec = object.at("spec");
    s.driver = spec.at("driver").get<std::string>();
    s.node_name = spec.value("nodeName", std::string());
    const json& pool = spec.at("pool");
    s.pool_name = pool.at("name").get<std::string>();
    s.pool_generation = pool.value("generation", int64_t{0});
    s.pool_slice_count = pool.value("resourceSliceCount", int64_t{1});
    if (auto it = spec.find("devices"); it != spec.end() && it->is_array()) {
      for (const auto& d : *it) s.devices.push_back(DecodeDevice(d, version));
    }
    return s;
  } catch (const json::exception& e) {
    return InvalidArgumentError(std::string("decode ResourceSlice: ") + e.what());
  }
}

}  // namespace rdmak8s::dra
