#include "fakes/fake_allocator.h"

#include <algorithm>
#include <optional>
#include <sstream>

namespace rdmak8s::testing {
namespace {

using nlohmann::json;

// A device of a usable pool (newest generation, complete).
struct Device {
  std::string driver, pool, name, node;  // node "" : the slice serves every node
  const json* object;
  std::string Key() const { return driver + "/" + pool + "/" + name; }
};

std::string Str(const json& o, const char* field) {
  return o.is_object() && o.contains(field) && o[field].is_string() ? o[field].get<std::string>() : "";
}
json Arr(const json& o, const char* field) {
  return o.is_object() && o.contains(field) && o[field].is_array() ? o[field] : json::array();
}

// The scheduler's view of the slices: per driver/pool only the highest generation counts, and
// only when all of its resourceSliceCount slices are there (an incomplete pool is skipped).
std::vector<Device> UsableDevices(const std::map<std::string, json>& slices) {
  struct Pool {
    int64_t generation = -1;
    int64_t want = 0;
    std::vector<const json*> slices;
  };
  std::map<std::pair<std::string, std::string>, Pool> pools;
  for (const auto& [name, s] : slices) {
    const json& spec = s.value("spec", json::object());
    const json& pool = spec.value("pool", json::object());
    Pool& p = pools[{Str(spec, "driver"), Str(pool, "name")}];
    const int64_t gen = pool.value("generation", int64_t{0});
    if (gen > p.generation) p = Pool{gen, pool.value("resourceSliceCount", int64_t{1}), {}};
    if (gen == p.generation) p.slices.push_back(&s);
  }
  std::vector<Device> out;
  for (const auto& [id, p] : pools) {
    if (static_cast<int64_t>(p.slices.size()) < p.want) continue;
    for (const json* s : p.slices) {
      const json& spec = (*s)["spec"];
      if (!spec.contains("devices") || !spec["devices"].is_array()) continue;
      for (const auto& d : spec["devices"]) {  // Device keeps a pointer: the stored object's
        out.push_back({id.first, id.second, Str(d, "name"), Str(spec, "nodeName"), &d});
      }
    }
  }
  return out;
}

// DeviceToleration.ToleratesTaint (k8s.io/api/resource/v1).
bool Tolerates(const json& toleration, const json& taint) {
  const std::string effect = Str(toleration, "effect");
  if (!effect.empty() && effect != Str(taint, "effect")) return false;
  const std::string key = Str(toleration, "key");
  if (!key.empty() && key != Str(taint, "key")) return false;
  const std::string op = toleration.value("operator", "Equal");
  if (op == "Exists") return true;
  return op == "Equal" && Str(toleration, "value") == Str(taint, "value");
}

// The taint that keeps the device from a request with these tolerations, if any. Only
// NoSchedule and NoExecute keep devices away; None and unknown effects are informational.
std::optional<std::string> BlockingTaint(const json& device, const json& tolerations) {
  for (const auto& taint : Arr(device, "taints")) {
    const std::string effect = Str(taint, "effect");
    if (effect != "NoSchedule" && effect != "NoExecute") continue;
    const bool tolerated = std::any_of(tolerations.begin(), tolerations.end(),
                                       [&](const json& t) { return Tolerates(t, taint); });
    if (!tolerated) return Str(taint, "key") + "=" + Str(taint, "value") + ":" + effect;
  }
  return std::nullopt;
}

bool InClass(const Device& d, const FakeDeviceClass& c) {
  if (d.driver != c.driver) return false;
  if (c.attribute.empty()) return true;
  // device.attributes["<driver>"].<name>: an unqualified name is in the driver's domain.
  const json& attributes = d.object->value("attributes", json::object());
  for (const std::string& name : {c.attribute, c.driver + "/" + c.attribute}) {
    if (attributes.contains(name)) return Str(attributes[name], "string") == c.value;
  }
  return false;
}

// One way to satisfy a request: the request itself, or one of its firstAvailable subrequests.
struct Alternative {
  std::string result_name;  // "nic" or "nic/rxe"
  json spec;                // deviceClassName, count, tolerations, ...
};

// What the fake cannot evaluate; "" when it can.
std::string Unsupported(const Alternative& a) {
  if (!Arr(a.spec, "selectors").empty()) return "request " + a.result_name + ": selectors (CEL) are not evaluated by the fake allocator";
  if (a.spec.value("allocationMode", "ExactCount") != "ExactCount") return "request " + a.result_name + ": allocationMode " + a.spec.value("allocationMode", "") + " is not supported by the fake allocator";
  if (a.spec.value("adminAccess", false)) return "request " + a.result_name + ": adminAccess is not supported by the fake allocator";
  if (a.spec.contains("capacity")) return "request " + a.result_name + ": capacity requests are not supported by the fake allocator";
  return "";
}

std::vector<Alternative> AlternativesOf(const json& request) {
  const std::string name = Str(request, "name");
  std::vector<Alternative> out;
  if (request.contains("firstAvailable")) {
    for (const auto& sub : Arr(request, "firstAvailable")) out.push_back({name + "/" + Str(sub, "name"), sub});
  } else if (request.contains("exactly")) {
    out.push_back({name, request["exactly"]});
  } else if (request.contains("deviceClassName")) {  // v1beta1's flat request
    out.push_back({name, request});
  }
  return out;
}

std::set<std::string> SplitSet(const std::string& s) {
  std::set<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.insert(item);
  }
  return out;
}

std::string Join(const std::set<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
}

std::set<std::string> AllocatedKeys(const json& claim) {
  std::set<std::string> out;
  const json& status = claim.value("status", json::object());
  if (!status.contains("allocation") || !status["allocation"].is_object()) return out;
  for (const auto& r : Arr(status["allocation"].value("devices", json::object()), "results")) {
    out.insert(Str(r, "driver") + "/" + Str(r, "pool") + "/" + Str(r, "device"));
  }
  return out;
}

bool Allocated(const json& claim) {
  return claim.contains("status") && claim["status"].is_object() && claim["status"].contains("allocation") &&
         claim["status"]["allocation"].is_object();
}

// The claim's binding state from its results' binding conditions and its status.devices.
struct Binding {
  enum { kBound, kWaiting, kFailed } state = kBound;
  std::string reason;   // kWaiting: what is missing
  std::string failed;   // kFailed: the device's key
};
Binding BindingOf(const json& claim) {
  Binding b;
  const json& status = claim["status"];
  const json devices = Arr(status, "devices");
  std::vector<std::string> missing;
  for (const auto& r : Arr(status["allocation"].value("devices", json::object()), "results")) {
    json conditions = json::array();
    for (const auto& e : devices) {
      if (Str(e, "driver") == Str(r, "driver") && Str(e, "pool") == Str(r, "pool") &&
          Str(e, "device") == Str(r, "device") && Str(e, "shareID") == Str(r, "shareID")) {
        conditions = Arr(e, "conditions");
      }
    }
    auto is_true = [&](const std::string& type) {
      return std::any_of(conditions.begin(), conditions.end(), [&](const json& c) {
        return Str(c, "type") == type && Str(c, "status") == "True";
      });
    };
    const std::string key = Str(r, "driver") + "/" + Str(r, "pool") + "/" + Str(r, "device");
    for (const auto& f : Arr(r, "bindingFailureConditions")) {
      if (f.is_string() && is_true(f.get<std::string>())) return {Binding::kFailed, key + ": " + f.get<std::string>() + "=True", key};
    }
    for (const auto& c : Arr(r, "bindingConditions")) {
      if (c.is_string() && !is_true(c.get<std::string>())) missing.push_back(key + " needs " + c.get<std::string>() + "=True");
    }
  }
  if (!missing.empty()) {
    b.state = Binding::kWaiting;
    for (const auto& m : missing) b.reason += (b.reason.empty() ? "" : "; ") + m;
  }
  return b;
}

// A greedy allocation of every request of `claim` from `devices` on `node` (or, for "", from
// slices serving every node): the allocation, or why there is none.
struct Attempt {
  json allocation;  // null when none
  std::string reason;
};
Attempt AllocateOn(const json& claim, const std::vector<Device>& devices, const std::string& node,
                   const std::map<std::string, FakeDeviceClass>& classes, const std::set<std::string>& taken,
                   const std::set<std::string>& avoided, const std::string& now) {
  const json& spec_devices = claim.value("spec", json::object()).value("devices", json::object());
  json results = json::array();
  std::set<std::string> chosen;
  bool node_local = false, binding = false;
  for (const auto& request : Arr(spec_devices, "requests")) {
    const std::vector<Alternative> alternatives = AlternativesOf(request);
    if (alternatives.empty()) return {nullptr, "request " + Str(request, "name") + ": neither exactly nor firstAvailable"};
    std::string why;
    bool satisfied = false;
    for (const auto& alt : alternatives) {
      if (std::string u = Unsupported(alt); !u.empty()) return {nullptr, u};
      const std::string class_name = Str(alt.spec, "deviceClassName");
      auto cls = classes.find(class_name);
      if (cls == classes.end()) {
        why = "request " + alt.result_name + ": DeviceClass \"" + class_name + "\" not known to the fake allocator";
        continue;
      }
      const json tolerations = Arr(alt.spec, "tolerations");
      const int64_t count = alt.spec.value("count", int64_t{1});
      std::vector<const Device*> picked;
      std::vector<std::string> skipped;
      for (const auto& d : devices) {
        if (static_cast<int64_t>(picked.size()) == count) break;
        if ((!d.node.empty() && d.node != node) || !InClass(d, cls->second)) continue;
        const std::string key = d.Key();
        if (taken.count(key) || chosen.count(key)) continue;
        if (avoided.count(key)) {
          skipped.push_back(key + " (binding failed before)");
          continue;
        }
        if (auto taint = BlockingTaint(*d.object, tolerations)) {
          skipped.push_back(key + " (taint " + *taint + ")");
          continue;
        }
        picked.push_back(&d);
      }
      if (static_cast<int64_t>(picked.size()) < count) {
        why = "request " + alt.result_name + ": " + std::to_string(picked.size()) + " of " + std::to_string(count) +
              " free device(s) of class " + class_name;
        for (const auto& s : skipped) why += "; skipped " + s;
        continue;
      }
      for (const Device* d : picked) {
        json r = {{"request", alt.result_name}, {"driver", d->driver}, {"pool", d->pool}, {"device", d->name}};
        if (!tolerations.empty()) r["tolerations"] = tolerations;
        for (const char* field : {"bindingConditions", "bindingFailureConditions"}) {
          if (!Arr(*d->object, field).empty()) r[field] = (*d->object)[field];
        }
        binding |= r.contains("bindingConditions");
        node_local |= !d->node.empty();
        chosen.insert(d->Key());
        results.push_back(std::move(r));
      }
      satisfied = true;
      break;
    }
    if (!satisfied) return {nullptr, why};
  }
  json config = json::array();
  for (const auto& c : Arr(spec_devices, "config")) {
    json entry = c;
    entry["source"] = "FromClaim";
    config.push_back(std::move(entry));
  }
  json allocation = {{"devices", {{"results", results}}}};
  if (!config.empty()) allocation["devices"]["config"] = config;
  if (node_local) {
    allocation["nodeSelector"] = {{"nodeSelectorTerms",
                                   {{{"matchFields", {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {node}}}}}}}}};
  }
  if (binding) allocation["allocationTimestamp"] = now;
  return {allocation, ""};
}

}  // namespace

const std::map<std::string, FakeDeviceClass>& ShippedDeviceClasses() {
  static const auto* classes = new std::map<std::string, FakeDeviceClass>{
      {"rdma", {"rdma.rdmak8s.io", "", ""}},
      {"rdma-roce", {"rdma.rdmak8s.io", "transport", "roce"}},
      {"rdma-ib", {"rdma.rdmak8s.io", "transport", "ib"}},
      {"rdma-iwarp", {"rdma.rdmak8s.io", "transport", "iwarp"}},
  };
  return *classes;
}

FakeAllocator::FakeAllocator(std::map<std::string, FakeDeviceClass> classes) : classes_(std::move(classes)) {}

std::vector<std::string> FakeAllocator::Run(const std::map<std::string, json>& slices,
                                            std::map<std::string, json>& claims, const std::string& now) {
  const std::vector<Device> devices = UsableDevices(slices);
  std::set<std::string> nodes;
  for (const auto& d : devices) {
    if (!d.node.empty()) nodes.insert(d.node);
  }
  if (nodes.empty()) nodes.insert("");
  std::set<std::string> taken;
  for (const auto& [key, claim] : claims) {
    for (const auto& k : AllocatedKeys(claim)) taken.insert(k);
  }
  std::vector<std::string> changed;
  for (auto& [key, claim] : claims) {
    if (!claim.is_object()) continue;
    const json before = claim;
    json& annotations = claim["metadata"]["annotations"];
    if (!annotations.is_object()) annotations = json::object();
    std::set<std::string> avoided = SplitSet(annotations.value(kAvoidedAnnotation, ""));
    if (Allocated(claim) && BindingOf(claim).state == Binding::kFailed) {
      // The scheduler's unreserve: the allocation goes, and with it the device status.
      const Binding b = BindingOf(claim);
      avoided.insert(b.failed);
      annotations[kAvoidedAnnotation] = Join(avoided);
      for (const auto& k : AllocatedKeys(claim)) taken.erase(k);
      claim["status"].erase("allocation");
      claim["status"].erase("devices");
    }
    if (!Allocated(claim)) {
      Attempt attempt;
      for (const auto& node : nodes) {
        attempt = AllocateOn(claim, devices, node, classes_, taken, avoided, now);
        if (!attempt.allocation.is_null()) break;
      }
      if (attempt.allocation.is_null()) {
        annotations[kBindingAnnotation] = "pending";
        annotations[kBindingReasonAnnotation] = attempt.reason;
      } else {
        claim["status"]["allocation"] = attempt.allocation;
        for (const auto& k : AllocatedKeys(claim)) taken.insert(k);
      }
    }
    if (Allocated(claim)) {
      const Binding b = BindingOf(claim);
      annotations[kBindingAnnotation] = b.state == Binding::kBound ? "bound" : "waiting";
      if (b.state == Binding::kBound) {
        annotations.erase(kBindingReasonAnnotation);
      } else {
        annotations[kBindingReasonAnnotation] = b.reason;
      }
    }
    if (claim != before) changed.push_back(key);
  }
  return changed;
}

}  // namespace rdmak8s::testing
