#include "cni/spec.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace rdmak8s::cni {
namespace {

using nlohmann::json;

struct FakeEnv {
  std::map<std::string, std::string> vars;
  std::function<const char*(const char*)> Get() {
    return [this](const char* k) -> const char* {
      auto it = vars.find(k);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

FakeEnv FullEnv(const std::string& cmd) {
  return FakeEnv{{{"CNI_COMMAND", cmd}, {"CNI_CONTAINERID", "abc123"}, {"CNI_NETNS", "/var/run/netns/x"},
                  {"CNI_IFNAME", "net1"}, {"CNI_PATH", "/opt/cni/bin"}}};
}

TEST(CniEnvTest, ParsesEveryCommand) {
  for (auto [name, cmd] : std::map<std::string, Command>{{"ADD", Command::kAdd}, {"DEL", Command::kDel},
                                                         {"CHECK", Command::kCheck}, {"GC", Command::kGc},
                                                         {"STATUS", Command::kStatus}, {"VERSION", Command::kVersion}}) {
    FakeEnv e = FullEnv(name);
    CniError err;
    auto env = ParseEnv(e.Get(), &err);
    ASSERT_TRUE(env) << name << ": " << err.msg;
    EXPECT_EQ(env->command, cmd);
  }
}

TEST(CniArgTest, FindsAKeyAmongThePairsTheRuntimePasses) {
  const std::string args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=team;K8S_POD_NAME=p-0;"
                           "K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_UID=0f1e-22";
  auto uid = CniArg(args, "K8S_POD_UID");
  ASSERT_TRUE(uid.ok()) << uid.status().ToString();
  EXPECT_EQ(*uid, "0f1e-22");
  EXPECT_EQ(*CniArg(args, "K8S_POD_NAME"), "p-0");
  EXPECT_EQ(CniArg(args, "K8S_POD").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(CniArg("", "K8S_POD_UID").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*CniArg("junk;K8S_POD_UID=a=b;", "K8S_POD_UID"), "a=b");
}

TEST(CniArgTest, AKeyGivenTwiceWithDifferentValuesIsRefused) {
  EXPECT_EQ(*CniArg("K8S_POD_UID=a;K8S_POD_UID=a", "K8S_POD_UID"), "a");
  auto twice = CniArg("K8S_POD_UID=a;K8S_POD_UID=b", "K8S_POD_UID");
  EXPECT_EQ(twice.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(twice.status().message().find("K8S_POD_UID"), std::string::npos);
}

TEST(CniEnvTest, MissingCommandIsCode4) {
  FakeEnv e;
  CniError err;
  EXPECT_FALSE(ParseEnv(e.Get(), &err));
  EXPECT_EQ(err.code, kErrInvalidEnv);
  EXPECT_NE(err.msg.find("CNI_COMMAND"), std::string::npos);
}

TEST(CniEnvTest, UnknownCommandIsCode4) {
  FakeEnv e = FullEnv("FROB");
  CniError err;
  EXPECT_FALSE(ParseEnv(e.Get(), &err));
  EXPECT_EQ(err.code, kErrInvalidEnv);
}

TEST(CniEnvTest, EachRequiredVariableMissingIsCode4NamingIt) {
  struct Case { std::string cmd, var; bool required; };
  for (const Case& c : std::vector<Case>{{"ADD", "CNI_CONTAINERID", true}, {"ADD", "CNI_NETNS", true},
                                         {"ADD", "CNI_IFNAME", true}, {"CHECK", "CNI_NETNS", true},
                                         {"DEL", "CNI_CONTAINERID", true}, {"DEL", "CNI_IFNAME", true},
                                         {"DEL", "CNI_NETNS", false}, {"GC", "CNI_CONTAINERID", false},
                                         {"STATUS", "CNI_IFNAME", false}}) {
    FakeEnv e = FullEnv(c.cmd);
    e.vars.erase(c.var);
    CniError err;
    auto env = ParseEnv(e.Get(), &err);
    if (c.required) {
      EXPECT_FALSE(env) << c.cmd << " without " << c.var;
      EXPECT_EQ(err.code, kErrInvalidEnv);
      EXPECT_NE(err.msg.find(c.var), std::string::npos) << err.msg;
    } else {
      EXPECT_TRUE(env) << c.cmd << " without " << c.var << ": " << err.msg;
    }
  }
}

TEST(CniEnvTest, BadContainerIdAndIfnameAreCode4) {
  for (std::string id : {"../etc", "-abc", "a/b", "a:b", "a b"}) {
    FakeEnv e = FullEnv("ADD");
    e.vars["CNI_CONTAINERID"] = id;
    CniError err;
    EXPECT_FALSE(ParseEnv(e.Get(), &err)) << id;
    EXPECT_EQ(err.code, kErrInvalidEnv);
  }
  for (std::string ifname : {".", "..", "a/b", "eth:0", "toolonginterface0", "a b"}) {
    FakeEnv e = FullEnv("DEL");
    e.vars["CNI_IFNAME"] = ifname;
    CniError err;
    EXPECT_FALSE(ParseEnv(e.Get(), &err)) << ifname;
    EXPECT_EQ(err.code, kErrInvalidEnv);
  }
}

TEST(CniNamesTest, ValidNames) {
  EXPECT_TRUE(ValidContainerId("0a_b.c-d"));
  EXPECT_TRUE(ValidIfname("net1"));
  EXPECT_TRUE(ValidIfname("abcdefghijklmno"));
  EXPECT_FALSE(ValidIfname(""));
  EXPECT_TRUE(ValidNetworkName("rdma-net.1"));
  EXPECT_FALSE(ValidNetworkName("../x"));
}

TEST(CniVersionTest, VersionAnswerListsEverySupportedVersion) {
  json j = json::parse(VersionJson("0.4.0"));
  EXPECT_EQ(j["cniVersion"], "0.4.0");
  EXPECT_EQ(j["supportedVersions"], json({"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"}));
  EXPECT_EQ(json::parse(VersionJson(""))["cniVersion"], "1.1.0");
}

TEST(CniVersionTest, CompareVersionsIsNumeric) {
  EXPECT_LT(CompareVersions("0.3.1", "0.4.0"), 0);
  EXPECT_LT(CompareVersions("0.10.0", "1.0.0"), 0);
  EXPECT_GT(CompareVersions("0.10.0", "0.9.0"), 0);
  EXPECT_EQ(CompareVersions("1.1.0", "1.1.0"), 0);
}

TEST(CniErrorTest, ErrorObjectHasCodeMsgDetails) {
  json j = json::parse(ErrorJson({7, "bad", "why"}, "1.0.0"));
  EXPECT_EQ(j["cniVersion"], "1.0.0");
  EXPECT_EQ(j["code"], 7);
  EXPECT_EQ(j["msg"], "bad");
  EXPECT_EQ(j["details"], "why");
  EXPECT_FALSE(json::parse(ErrorJson({4, "x", ""}, ""))["details"].is_string());
}

json Result100() {
  return json::parse(R"({
    "cniVersion": "1.1.0",
    "interfaces": [{"name": "net1", "mac": "aa:bb:cc:dd:ee:ff", "mtu": 1500, "sandbox": "/run/netns/p",
                    "pciID": "0000:5e:00.2", "socketPath": "/x"}],
    "ips": [{"address": "10.1.0.2/24", "gateway": "10.1.0.1", "interface": 0},
            {"address": "fd00::2/64", "interface": 0}],
    "routes": [{"dst": "0.0.0.0/0", "gw": "10.1.0.1", "mtu": 9000, "table": 5}],
    "dns": {"nameservers": ["10.1.0.1"]}
  })");
}

TEST(CniConvertTest, ToPre1AddsIpVersionAndDrops11Fields) {
  for (std::string v : {"0.3.0", "0.3.1", "0.4.0"}) {
    CniError err;
    auto out = ConvertResult(Result100(), v, &err);
    ASSERT_TRUE(out) << err.msg;
    EXPECT_EQ((*out)["cniVersion"], v);
    EXPECT_EQ((*out)["ips"][0]["version"], "4");
    EXPECT_EQ((*out)["ips"][1]["version"], "6");
    EXPECT_FALSE((*out)["interfaces"][0].contains("mtu"));
    EXPECT_FALSE((*out)["interfaces"][0].contains("pciID"));
    EXPECT_FALSE((*out)["routes"][0].contains("mtu"));
    EXPECT_EQ((*out)["routes"][0]["gw"], "10.1.0.1");
    EXPECT_EQ((*out)["dns"]["nameservers"][0], "10.1.0.1");
  }
}

TEST(CniConvertTest, From040To100DropsIpVersion) {
  json r = json::parse(R"({"cniVersion":"0.4.0","interfaces":[{"name":"net1"}],
    "ips":[{"version":"4","address":"10.1.0.2/24","interface":0}]})");
  CniError err;
  auto out = ConvertResult(r, "1.0.0", &err);
  ASSERT_TRUE(out) << err.msg;
  EXPECT_FALSE((*out)["ips"][0].contains("version"));
  EXPECT_EQ((*out)["cniVersion"], "1.0.0");
  auto out11 = ConvertResult(Result100(), "1.1.0", &err);
  ASSERT_TRUE(out11);
  EXPECT_EQ((*out11)["interfaces"][0]["pciID"], "0000:5e:00.2");
  EXPECT_EQ((*out11)["routes"][0]["table"], 5);
  auto out10 = ConvertResult(Result100(), "1.0.0", &err);
  ASSERT_TRUE(out10);
  EXPECT_FALSE((*out10)["interfaces"][0].contains("pciID"));
  EXPECT_FALSE((*out10)["routes"][0].contains("mtu")) << "route mtu is 1.1.0";
  EXPECT_FALSE((*out10)["routes"][0].contains("table")) << "route table is 1.1.0";
  EXPECT_EQ((*out10)["routes"][0]["dst"], "0.0.0.0/0");
  EXPECT_EQ((*out10)["routes"][0]["gw"], "10.1.0.1");
}

TEST(CniConvertTest, MalformedPrevResultIsCode7NamingTheField) {
  CniError err;
  EXPECT_FALSE(ConvertResult(json::parse(R"({"ips":[{"address":"nope"}]})"), "1.0.0", &err));
  EXPECT_EQ(err.code, kErrInvalidConfig);
  EXPECT_NE(err.msg.find("nope"), std::string::npos);
  EXPECT_FALSE(ConvertResult(json::parse(R"({"interfaces":[],"ips":[{"address":"10.0.0.1/8","interface":3}]})"),
                             "1.0.0", &err));
  EXPECT_FALSE(ConvertResult(json::parse(R"({"ips":{}})"), "1.0.0", &err));
  EXPECT_FALSE(ConvertResult(json::parse(R"([1])"), "1.0.0", &err));
}

}  // namespace
}  // namespace rdmak8s::cni
