#include "cni/netconf.h"

#include <gtest/gtest.h>

namespace rdmak8s::cni {
namespace {

std::optional<NetConf> Parse(const std::string& s, CniError* err, Command c = Command::kAdd) {
  return ParseNetConf(s, c, err);
}

TEST(NetConfTest, MalformedJsonIsCode6) {
  CniError err;
  EXPECT_FALSE(Parse("{not json", &err));
  EXPECT_EQ(err.code, kErrDecode);
  EXPECT_FALSE(Parse("", &err));
  EXPECT_EQ(err.code, kErrDecode);
  EXPECT_FALSE(Parse("[1,2]", &err));
  EXPECT_EQ(err.code, kErrDecode);
}

// Issue 32 item 4: a netconf nested 200,000 levels deep crashed the plugin (libcni refuses
// past 10,000 before we run, but a runtime may exec us directly); past json_reader::kMaxDepth
// it is a decode error naming the bound.
TEST(NetConfTest, NestingPastTheReadersBoundIsCode6NamingIt) {
  for (size_t depth : {size_t{200}, size_t{200000}}) {
    CniError err;
    const std::string deep = std::string(depth, '[') + std::string(depth, ']');
    EXPECT_FALSE(Parse(R"({"cniVersion":"1.0.0","name":"n","type":"rdmak8s","args":)" + deep + "}", &err));
    EXPECT_EQ(err.code, kErrDecode);
    EXPECT_NE(err.msg.find("nested deeper than 128 levels"), std::string::npos) << err.msg;
  }
}

TEST(NetConfTest, MissingOrUnsupportedVersionIsCode1) {
  CniError err;
  EXPECT_FALSE(Parse(R"({"name":"n","type":"rdmak8s"})", &err));
  EXPECT_EQ(err.code, kErrIncompatibleVersion);
  EXPECT_FALSE(Parse(R"({"cniVersion":"0.2.0","name":"n","type":"rdmak8s"})", &err));
  EXPECT_EQ(err.code, kErrIncompatibleVersion);
  EXPECT_NE(err.msg.find("0.2.0"), std::string::npos);
}

TEST(NetConfTest, BadNetworkNameIsCode7) {
  CniError err;
  EXPECT_FALSE(Parse(R"({"cniVersion":"1.0.0","name":"../../etc","type":"rdmak8s"})", &err));
  EXPECT_EQ(err.code, kErrInvalidConfig);
  EXPECT_NE(err.msg.find("network name"), std::string::npos);
}

TEST(NetConfTest, ParsesEveryField) {
  CniError err;
  auto c = Parse(R"({"cniVersion":"1.1.0","name":"rdma","type":"rdmak8s","deviceID":"0000:5e:00.2",
    "port":1,"gidTimeoutMs":100,"ensureIPv6Gid":true,"pkey":"0x8001","netnsMode":"exclusive",
    "sysfsRoot":"/tmp/s","configfsRoot":"/tmp/c","stateDir":"/tmp/st","logFile":"/tmp/l","logLevel":"debug",
    "qos":{"trust":"dscp","pfc":[3,3,4],"dscpToPriority":{"26":3,"48":6},"ecn":[3],"roceTos":106,
           "trafficClass":106,"strict":true},
    "prevResult":{"cniVersion":"1.1.0"}})", &err);
  ASSERT_TRUE(c) << err.msg;
  EXPECT_EQ(c->device_id, "0000:5e:00.2");
  EXPECT_EQ(c->port, 1u);
  EXPECT_EQ(c->gid_timeout_ms, 100);
  EXPECT_TRUE(c->ensure_ipv6_gid);
  EXPECT_EQ(*c->pkey, 0x8001);
  EXPECT_EQ(c->netns_mode, "exclusive");
  EXPECT_EQ(c->sysfs_root, "/tmp/s");
  EXPECT_EQ(c->log_level, LogLevel::kDebug);
  EXPECT_EQ(*c->qos.trust, "dscp");
  EXPECT_EQ(c->qos.pfc, (std::vector<uint8_t>{3, 4}));
  EXPECT_EQ(c->qos.dscp_to_priority.at(26), 3);
  EXPECT_EQ(c->qos.dscp_to_priority.at(48), 6);
  EXPECT_EQ(*c->qos.roce_tos, 106);
  EXPECT_TRUE(c->qos.strict);
  EXPECT_TRUE(c->prev_result.has_value());
}

TEST(NetConfTest, RuntimeConfigDeviceIdWins) {
  CniError err;
  auto c = Parse(R"({"cniVersion":"1.0.0","name":"n","type":"rdmak8s","deviceID":"a",
                     "runtimeConfig":{"deviceID":"mlx5_3"}})", &err);
  ASSERT_TRUE(c) << err.msg;
  EXPECT_EQ(c->device_id, "mlx5_3");
}

TEST(NetConfTest, DraRequestIsARequestNameAndDelIgnoresAMalformedOne) {
  CniError err;
  auto c = Parse(R"({"cniVersion":"1.0.0","name":"n","type":"rdmak8s","draRequest":"nics/east"})", &err);
  ASSERT_TRUE(c) << err.msg;
  EXPECT_EQ(c->dra_request, "nics/east");
  const std::string bad = R"({"cniVersion":"1.0.0","name":"n","type":"rdmak8s","draRequest":"../etc"})";
  EXPECT_FALSE(Parse(bad, &err));
  EXPECT_EQ(err.code, kErrInvalidConfig);
  EXPECT_NE(err.msg.find("draRequest"), std::string::npos) << err.msg;
  CniError del_err;
  auto del = Parse(bad, &del_err, Command::kDel);
  ASSERT_TRUE(del) << del_err.msg;
  EXPECT_TRUE(del->dra_request.empty());
}

TEST(NetConfTest, InvalidFieldsAreCode7NamingTheField) {
  for (std::string bad : {R"("qos":{"pfc":[8]})", R"("qos":{"trust":"vlan"})",
                          R"("qos":{"dscpToPriority":{"64":1}})", R"("qos":{"dscpToPriority":{"10":9}})",
                          R"("qos":{"roceTos":256})", R"("gidTimeoutMs":-1)", R"("pkey":"0x0000")",
                          R"("pkey":"zz")", R"("logLevel":"loud")", R"("netnsMode":"both")",
                          R"("deviceID":5)", R"("ensureIPv6Gid":"yes")", R"("qos":[])",
                          R"("prevResult":[])"}) {
    CniError err;
    EXPECT_FALSE(Parse(R"({"cniVersion":"1.0.0","name":"n","type":"rdmak8s",)" + bad + "}", &err)) << bad;
    EXPECT_EQ(err.code, kErrInvalidConfig) << bad;
  }
}

TEST(NetConfTest, GidTimeoutIsCappedAtOneMinute) {
  CniError err;
  auto c = Parse(R"({"cniVersion":"1.0.0","name":"n","type":"rdmak8s","gidTimeoutMs":60000})", &err);
  ASSERT_TRUE(c) << err.msg;
  EXPECT_EQ(c->gid_timeout_ms, 60000);
  EXPECT_FALSE(Parse(R"({"cniVersion":"1.0.0","name":"n","type":"rdmak8s","gidTimeoutMs":60001})", &err));
  EXPECT_EQ(err.code, kErrInvalidConfig);
  EXPECT_NE(err.msg.find("gidTimeoutMs"), std::string::npos) << err.msg;
  EXPECT_NE(err.msg.find("60000"), std::string::npos) << err.msg;
}

TEST(NetConfTest, DelIgnoresAMalformedQosOrPrevResultThatAddRefuses) {
  const std::string bad = R"({"cniVersion":"1.0.0","name":"n","type":"rdmak8s",
      "qos":{"pfc":[9],"trust":"vlan"},"prevResult":[1]})";
  CniError err;
  EXPECT_FALSE(Parse(bad, &err, Command::kAdd));
  EXPECT_EQ(err.code, kErrInvalidConfig);
  auto c = Parse(bad, &err, Command::kDel);
  ASSERT_TRUE(c) << err.msg;
  EXPECT_TRUE(c->qos.empty());
  EXPECT_FALSE(c->prev_result.has_value());
  EXPECT_FALSE(Parse(R"({"cniVersion":"1.0.0","name":"bad/name","qos":{"pfc":[9]}})", &err, Command::kDel))
      << "what DEL needs (the network name) is still checked";
}

TEST(NetConfTest, RelativeHostPathsAreRefusedNamingTheField) {
  for (std::string key : {"stateDir", "logFile", "sysfsRoot", "configfsRoot"}) {
    CniError err;
    EXPECT_FALSE(Parse(R"({"cniVersion":"1.0.0","name":"n","type":"rdmak8s",")" + key + R"(":"var/x"})", &err))
        << key;
    EXPECT_EQ(err.code, kErrInvalidConfig) << key;
    EXPECT_NE(err.msg.find(key), std::string::npos) << err.msg;
    EXPECT_NE(err.msg.find("absolute"), std::string::npos) << err.msg;
  }
}

TEST(NetConfTest, PkeyWithoutA15BitKeySaysWhy) {
  CniError err;
  EXPECT_FALSE(Parse(R"({"cniVersion":"1.0.0","name":"n","type":"rdmak8s","pkey":"0x8000"})", &err));
  EXPECT_NE(err.msg.find("0x7fff"), std::string::npos) << err.msg;
  EXPECT_NE(err.msg.find("full-member"), std::string::npos) << err.msg;
  auto c = Parse(R"({"cniVersion":"1.0.0","name":"n","type":"rdmak8s","pkey":"0x8001"})", &err);
  ASSERT_TRUE(c) << err.msg;
  EXPECT_EQ(*c->pkey, 0x8001);
}

TEST(NetConfTest, PkeyStringIsHexWithOrWithout0x) {
  // As in IPoIB (ip link add ... type ipoib pkey 8001, /sys/class/net/ib0.8001): hex digits.
  for (auto [text, want] : std::vector<std::pair<std::string, uint16_t>>{
           {"8001", 0x8001}, {"0x8001", 0x8001}, {"0X8001", 0x8001}, {"0800", 0x0800},
           {"7fff", 0x7fff}, {"0x7FFF", 0x7fff}, {"1", 0x0001}, {"0x0001", 0x0001}}) {
    CniError err;
    auto c = Parse(R"({"cniVersion":"1.0.0","name":"n","type":"rdmak8s","pkey":")" + text + R"("})", &err);
    ASSERT_TRUE(c) << text << ": " << err.msg;
    EXPECT_EQ(*c->pkey, want) << text;
  }
}

TEST(NetConfTest, PkeyThatIsNotAHexStringIsRefusedNamingTheField) {
  for (std::string bad : {R"(32769)", R"(8001)", R"("")", R"("0x")", R"("10000")", R"("0x18001")",
                          R"("-1")", R"(" 8001")", R"("+8001")", R"("8001 ")", R"("80g1")",
                          R"("0x-1")", R"(true)"}) {
    CniError err;
    EXPECT_FALSE(Parse(R"({"cniVersion":"1.0.0","name":"n","type":"rdmak8s","pkey":)" + bad + "}", &err))
        << bad;
    EXPECT_EQ(err.code, kErrInvalidConfig) << bad;
    EXPECT_NE(err.msg.find("$.pkey:"), std::string::npos) << err.msg;
    EXPECT_NE(err.msg.find("hex"), std::string::npos) << err.msg;
  }
}

TEST(NetConfTest, GcWithoutValidAttachmentsIsRefusedNamingTheKey) {
  for (std::string extra : {"", R"(,"cni.dev/valid-attachments":null)"}) {
    CniError err;
    EXPECT_FALSE(Parse(R"({"cniVersion":"1.1.0","name":"n","type":"rdmak8s")" + extra + "}", &err,
                       Command::kGc))
        << extra;
    EXPECT_EQ(err.code, kErrInvalidConfig) << extra;
    EXPECT_NE(err.msg.find("cni.dev/valid-attachments"), std::string::npos) << err.msg;
  }
  CniError err;
  auto c = Parse(R"({"cniVersion":"1.1.0","name":"n","type":"rdmak8s","cni.dev/valid-attachments":[]})",
                 &err, Command::kGc);
  ASSERT_TRUE(c) << err.msg;
  EXPECT_TRUE(c->valid_attachments.empty()) << "an empty list is valid: nothing is live";
}

TEST(NetConfTest, GcReadsValidAttachments) {
  CniError err;
  auto c = Parse(R"({"cniVersion":"1.1.0","name":"n","type":"rdmak8s",
     "cni.dev/valid-attachments":[{"containerID":"c1","ifname":"net1"}]})", &err, Command::kGc);
  ASSERT_TRUE(c) << err.msg;
  ASSERT_EQ(c->valid_attachments.size(), 1u);
  EXPECT_EQ(c->valid_attachments[0].container_id, "c1");
  EXPECT_FALSE(Parse(R"({"cniVersion":"1.1.0","name":"n","cni.dev/valid-attachments":[{"containerID":1}]})",
                     &err, Command::kGc));
  EXPECT_EQ(err.code, kErrInvalidConfig);
}

}  // namespace
}  // namespace rdmak8s::cni
