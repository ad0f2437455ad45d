// Wire checks of our hand-written DRA protos against the upstream API: full gRPC service and
// method names (what goes on the wire as the HTTP/2 path), field numbers and types, and the
// bytes of known messages encoded by hand from the protobuf encoding rules.
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <google/protobuf/descriptor.h>

#include "dra-health/v1alpha1/api.pb.h"
#include "dra/v1/api.pb.h"
#include "dra/v1beta1/api.pb.h"
#include "pluginregistration/v1/api.pb.h"

namespace {

namespace v1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace v1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;
using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

const google::protobuf::DescriptorPool* Pool() {
  return google::protobuf::DescriptorPool::generated_pool();
}

void ExpectField(const Descriptor* d, const std::string& name, int number, FieldDescriptor::Type type,
                 bool repeated) {
  ASSERT_NE(d, nullptr);
  const FieldDescriptor* f = d->FindFieldByName(name);
  ASSERT_NE(f, nullptr) << d->full_name() << "." << name;
  EXPECT_EQ(f->number(), number) << d->full_name() << "." << name;
  EXPECT_EQ(f->type(), type) << d->full_name() << "." << name;
  EXPECT_EQ(f->is_repeated(), repeated) << d->full_name() << "." << name;
}

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

void ExpectDraPackage(const std::string& pkg) {
  const auto* svc = Pool()->FindServiceByName(pkg + ".DRAPlugin");
  ASSERT_NE(svc, nullptr) << pkg;
  ASSERT_NE(svc->FindMethodByName("NodePrepareResources"), nullptr);
  ASSERT_NE(svc->FindMethodByName("NodeUnprepareResources"), nullptr);
  EXPECT_EQ(svc->FindMethodByName("NodePrepareResources")->input_type()->full_name(),
            pkg + ".NodePrepareResourcesRequest");
  EXPECT_EQ(svc->FindMethodByName("NodeUnprepareResources")->output_type()->full_name(),
            pkg + ".NodeUnprepareResourcesResponse");
  auto msg = [&](const std::string& n) { return Pool()->FindMessageTypeByName(pkg + "." + n); };
  using T = FieldDescriptor;
  ExpectField(msg("NodePrepareResourcesRequest"), "claims", 1, T::TYPE_MESSAGE, true);
  ExpectField(msg("NodePrepareResourcesResponse"), "claims", 1, T::TYPE_MESSAGE, true);
  EXPECT_TRUE(msg("NodePrepareResourcesResponse")->FindFieldByName("claims")->is_map());
  ExpectField(msg("NodePrepareResourceResponse"), "devices", 1, T::TYPE_MESSAGE, true);
  ExpectField(msg("NodePrepareResourceResponse"), "error", 2, T::TYPE_STRING, false);
  ExpectField(msg("Device"), "request_names", 1, T::TYPE_STRING, true);
  ExpectField(msg("Device"), "pool_name", 2, T::TYPE_STRING, false);
  ExpectField(msg("Device"), "device_name", 3, T::TYPE_STRING, false);
  ExpectField(msg("Device"), "cdi_device_ids", 4, T::TYPE_STRING, true);
  ExpectField(msg("NodeUnprepareResourcesRequest"), "claims", 1, T::TYPE_MESSAGE, true);
  ExpectField(msg("NodeUnprepareResourcesResponse"), "claims", 1, T::TYPE_MESSAGE, true);
  EXPECT_TRUE(msg("NodeUnprepareResourcesResponse")->FindFieldByName("claims")->is_map());
  ExpectField(msg("NodeUnprepareResourceResponse"), "error", 1, T::TYPE_STRING, false);
  ExpectField(msg("Claim"), "namespace", 1, T::TYPE_STRING, false);
  ExpectField(msg("Claim"), "uid", 2, T::TYPE_STRING, false);
  ExpectField(msg("Claim"), "name", 3, T::TYPE_STRING, false);
  // Exactly upstream's fields (v1.34-v1.36 publish these and no others; a claim's share ID
  // lives in the ResourceClaim's allocation result, not in the kubelet API).
  for (const auto& [m, n] : std::vector<std::pair<std::string, int>>{
           {"NodePrepareResourcesRequest", 1}, {"NodePrepareResourcesResponse", 1},
           {"NodePrepareResourceResponse", 2}, {"Device", 4}, {"NodeUnprepareResourcesRequest", 1},
           {"NodeUnprepareResourcesResponse", 1}, {"NodeUnprepareResourceResponse", 1},
           {"Claim", 3}}) {
    EXPECT_EQ(msg(m)->field_count(), n) << pkg << "." << m;
  }
}

TEST(DraProtoWire, V1ServiceAndFieldsFollowUpstream) { ExpectDraPackage("k8s.io.kubelet.pkg.apis.dra.v1"); }

TEST(DraProtoWire, V1beta1ServiceAndFieldsFollowUpstream) {
  ExpectDraPackage("k8s.io.kubelet.pkg.apis.dra.v1beta1");
}

TEST(DraProtoWire, ClaimEncodesAsUpstreamBytes) {
  v1::Claim c;
  c.set_namespace_("ns");
  c.set_uid("u");
  c.set_name("n");
  // field 1 (namespace) LEN 2 "ns", field 2 (uid) LEN 1 "u", field 3 (name) LEN 1 "n"
  EXPECT_EQ(c.SerializeAsString(), Bytes({0x0a, 2, 'n', 's', 0x12, 1, 'u', 0x1a, 1, 'n'}));
}

TEST(DraProtoWire, PrepareResponseEncodesAsUpstreamBytes) {
  v1::NodePrepareResourcesResponse r;
  auto& e = (*r.mutable_claims())["u"];
  auto* d = e.add_devices();
  d->add_request_names("r");
  d->set_pool_name("p");
  d->set_device_name("d");
  d->add_cdi_device_ids("k=x");
  // map entry = field 1 LEN { key: field 1 "u", value: field 2 LEN {
  //   devices: field 1 LEN { 1:"r" 2:"p" 3:"d" 4:"k=x" } } }
  std::string device = Bytes({0x0a, 1, 'r', 0x12, 1, 'p', 0x1a, 1, 'd', 0x22, 3, 'k', '=', 'x'});
  std::string value = Bytes({0x0a, static_cast<int>(device.size())}) + device;
  std::string entry = Bytes({0x0a, 1, 'u', 0x12, static_cast<int>(value.size())}) + value;
  EXPECT_EQ(r.SerializeAsString(), Bytes({0x0a, static_cast<int>(entry.size())}) + entry);

  v1::NodePrepareResourcesResponse err;
  (*err.mutable_claims())["u"].set_error("x");
  // value: field 2 (error) LEN 1 "x"
  EXPECT_EQ(err.SerializeAsString(), Bytes({0x0a, 8, 0x0a, 1, 'u', 0x12, 3, 0x12, 1, 'x'}));
}

TEST(DraProtoWire, V1AndV1beta1AreWireIdentical) {
  v1beta1::NodePrepareResourcesResponse b;
  auto* d = (*b.mutable_claims())["uid-1"].add_devices();
  d->set_pool_name("node-a");
  d->set_device_name("mlx5-0");
  d->add_cdi_device_ids("rdma.rdmak8s.io/claim=uid-1-mlx5-0");
  v1::NodePrepareResourcesResponse a;
  ASSERT_TRUE(a.ParseFromString(b.SerializeAsString()));
  EXPECT_EQ(a.claims().at("uid-1").devices(0).cdi_device_ids(0), "rdma.rdmak8s.io/claim=uid-1-mlx5-0");
  EXPECT_EQ(a.SerializeAsString(), b.SerializeAsString());
}

TEST(DraProtoWire, HealthServiceAndFieldsFollowUpstream) {
  const auto* svc = Pool()->FindServiceByName("v1alpha1.DRAResourceHealth");
  ASSERT_NE(svc, nullptr);
  const auto* m = svc->FindMethodByName("NodeWatchResources");
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(m->server_streaming());
  EXPECT_FALSE(m->client_streaming());
  using T = FieldDescriptor;
  auto msg = [](const std::string& n) { return Pool()->FindMessageTypeByName("v1alpha1." + n); };
  ExpectField(msg("DeviceIdentifier"), "pool_name", 1, T::TYPE_STRING, false);
  ExpectField(msg("DeviceIdentifier"), "device_name", 2, T::TYPE_STRING, false);
  ExpectField(msg("DeviceHealth"), "device", 1, T::TYPE_MESSAGE, false);
  ExpectField(msg("DeviceHealth"), "health", 2, T::TYPE_ENUM, false);
  ExpectField(msg("DeviceHealth"), "last_updated_time", 3, T::TYPE_INT64, false);
  ExpectField(msg("DeviceHealth"), "health_check_timeout_seconds", 4, T::TYPE_INT64, false);
  ExpectField(msg("DeviceHealth"), "message", 5, T::TYPE_STRING, false);
  EXPECT_EQ(msg("DeviceHealth")->field_count(), 5);
  ExpectField(msg("NodeWatchResourcesResponse"), "devices", 1, T::TYPE_MESSAGE, true);
  EXPECT_EQ(msg("NodeWatchResourcesResponse")->field_count(), 1);
  EXPECT_EQ(msg("DeviceIdentifier")->field_count(), 2);
  EXPECT_EQ(msg("NodeWatchResourcesRequest")->field_count(), 0);
  const auto* e = Pool()->FindEnumTypeByName("v1alpha1.HealthStatus");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->FindValueByName("UNKNOWN")->number(), 0);
  EXPECT_EQ(e->FindValueByName("HEALTHY")->number(), 1);
  EXPECT_EQ(e->FindValueByName("UNHEALTHY")->number(), 2);

  v1alpha1::DeviceHealth h;
  h.mutable_device()->set_pool_name("p");
  h.mutable_device()->set_device_name("d");
  h.set_health(v1alpha1::UNHEALTHY);
  h.set_last_updated_time(300);
  h.set_health_check_timeout_seconds(30);
  h.set_message("x");
  // 1: LEN 6 {1:"p" 2:"d"}, 2: varint 2, 3: varint 300 (0xac 0x02), 4: varint 30, 5: LEN 1 "x"
  EXPECT_EQ(h.SerializeAsString(), Bytes({0x0a, 6, 0x0a, 1, 'p', 0x12, 1, 'd', 0x10, 2, 0x18, 0xac,
                                          0x02, 0x20, 30, 0x2a, 1, 'x'}));
}

TEST(DraProtoWire, RegistrationServiceIsPluginregistration) {
  const auto* svc = Pool()->FindServiceByName("pluginregistration.Registration");
  ASSERT_NE(svc, nullptr);
  EXPECT_NE(svc->FindMethodByName("GetInfo"), nullptr);
  EXPECT_NE(svc->FindMethodByName("NotifyRegistrationStatus"), nullptr);
  pluginregistration::PluginInfo info;
  info.set_type("DRAPlugin");
  info.add_supported_versions("v1.DRAPlugin");
  std::string v = "v1.DRAPlugin";
  EXPECT_EQ(info.SerializeAsString(),
            Bytes({0x0a, 9, 'D', 'R', 'A', 'P', 'l', 'u', 'g', 'i', 'n', 0x22, 12}) + v);
}

}  // namespace
