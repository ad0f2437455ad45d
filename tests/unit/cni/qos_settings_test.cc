#include "cni/qos_settings.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "cni_test_util.h"
#include "fakes/fake_dcb_netlink.h"

namespace rdmak8s::cni {
namespace {

using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

TEST(QosSettingsTest, RequiredQosSettingsNameTheirObjects) {
  QosPolicy q;
  q.trust = "dscp";
  q.pfc = {3};
  q.dscp_to_priority = {{26, 3}};
  q.ecn = {3};
  q.roce_tos = 106;
  q.traffic_class = 96;
  auto k = RequiredQosSettings(q, "pf0", "mlx5_1", {1, 2});
  EXPECT_EQ(k.at("trust:pf0"), "dscp");
  EXPECT_EQ(k.at("pfc:pf0:3"), "on");
  EXPECT_EQ(k.at("app:pf0:26"), "3");
  EXPECT_EQ(k.at("ecn:pf0:rp:3"), "1");
  EXPECT_EQ(k.at("ecn:pf0:np:3"), "1");
  EXPECT_EQ(k.at("tos:mlx5_1:2"), "106");
  EXPECT_EQ(k.at("tc:mlx5_1:1"), "96");
  EXPECT_TRUE(IsNodeWideQosSetting("pfc:pf0:3"));
  EXPECT_FALSE(IsNodeWideQosSetting("tos:mlx5_1:1"));
  EXPECT_EQ(RequiredQosSettings(q, "", "mlx5_1", {1}).count("pfc::3"), 0u) << "no PF: no node-wide knobs";
}

TEST(QosSettingsTest, DcbQosSettingsReadAndWrite) {
  FakeDcbNetlink dcb;
  dcb.AddNetdev("pf0");
  QosSettingContext ctx{&dcb, "", "", ""};
  EXPECT_EQ(*ReadQosSetting(ctx, "pfc:pf0:3"), "off");
  ASSERT_TRUE(WriteQosSetting(ctx, "pfc:pf0:3", "on").ok());
  ASSERT_TRUE(WriteQosSetting(ctx, "pfc:pf0:4", "on").ok());
  EXPECT_EQ(dcb.Find("pf0")->pfc.enabled, (1 << 3) | (1 << 4));
  ASSERT_TRUE(WriteQosSetting(ctx, "pfc:pf0:3", "off").ok());
  EXPECT_EQ(dcb.Find("pf0")->pfc.enabled, 1 << 4) << "other bits untouched";
  EXPECT_EQ(*ReadQosSetting(ctx, "trust:pf0"), "pcp");
  ASSERT_TRUE(WriteQosSetting(ctx, "trust:pf0", "dscp").ok());
  EXPECT_EQ(*ReadQosSetting(ctx, "trust:pf0"), "dscp");
}

TEST(QosSettingsTest, AppQosSettingReplacesAnEntryWithAnotherPriority) {
  FakeDcbNetlink dcb;
  dcb.AddNetdev("pf0").app = {{kDcbAppSelDscp, 26, 5}, {kDcbAppSelDscp, 10, 1}};
  QosSettingContext ctx{&dcb, "", "", ""};
  EXPECT_EQ(*ReadQosSetting(ctx, "app:pf0:26"), "5");
  EXPECT_EQ(*ReadQosSetting(ctx, "app:pf0:48"), "none");
  ASSERT_TRUE(WriteQosSetting(ctx, "app:pf0:26", "3").ok());
  EXPECT_EQ(*ReadQosSetting(ctx, "app:pf0:26"), "3");
  EXPECT_EQ(dcb.Find("pf0")->app.size(), 2u);
  ASSERT_TRUE(WriteQosSetting(ctx, "app:pf0:26", "none").ok());
  EXPECT_EQ(*ReadQosSetting(ctx, "app:pf0:26"), "none");
  EXPECT_EQ(*ReadQosSetting(ctx, "app:pf0:10"), "1") << "other DSCPs untouched";
}

TEST(QosSettingsTest, UnsupportedIsUnimplemented) {
  FakeDcbNetlink dcb;
  FakeDcbNetlink::NetdevState veth;
  veth.unsupported = true;
  dcb.AddNetdev("veth0", veth);
  FakeDcbNetlink::NetdevState old_kernel;
  old_kernel.trust = std::nullopt;
  dcb.AddNetdev("pf0", old_kernel);
  TempDir t;
  QosSettingContext ctx{&dcb, t.path() + "/sys", t.path() + "/sys", t.path() + "/config"};
  EXPECT_EQ(ReadQosSetting(ctx, "pfc:veth0:3").status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(ReadQosSetting(ctx, "trust:pf0").status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(ReadQosSetting(ctx, "ecn:pf0:rp:3").status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(ReadQosSetting(ctx, "tos:mlx5_0:1").status().code(), StatusCode::kUnimplemented) << "no rdma_cm configfs";
  EXPECT_EQ(ReadQosSetting(ctx, "tc:mlx5_0:1").status().code(), StatusCode::kUnimplemented);
  QosSettingContext no_dcb{nullptr, "", "", ""};
  EXPECT_EQ(ReadQosSetting(no_dcb, "pfc:pf0:3").status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(ReadQosSetting(ctx, "pfc:nosuch:3").status().code(), StatusCode::kNotFound) << "missing is not unsupported";
  EXPECT_EQ(ReadQosSetting(ctx, "bogus:x").status().code(), StatusCode::kInvalidArgument);
}

TEST(QosSettingsTest, FileQosSettingsAndTheRdmaCmGroupIsCreatedByMkdir) {
  TempDir t;
  const std::string sys = t.path() + "/sys", cfg = t.path() + "/config";
  ASSERT_TRUE(WriteFile(sys + "/class/net/pf0/ecn/roce_np/enable/3", "0\n"));
  ASSERT_TRUE(WriteFile(sys + "/class/infiniband/mlx5_0/tc/1/traffic_class", "0\n"));
  ASSERT_EQ(std::system(("mkdir -p " + cfg + "/rdma_cm").c_str()), 0);
  QosSettingContext ctx{nullptr, sys, sys, cfg};
  ASSERT_TRUE(WriteQosSetting(ctx, "ecn:pf0:np:3", "1").ok());
  EXPECT_EQ(ReadFile(sys + "/class/net/pf0/ecn/roce_np/enable/3"), "1");
  ASSERT_TRUE(WriteQosSetting(ctx, "tc:mlx5_0:1", "106").ok());
  EXPECT_EQ(*ReadQosSetting(ctx, "tc:mlx5_0:1"), "106");
  // configfs makes ports/<n>/default_roce_tos appear on mkdir; a plain directory can't, so the
  // attribute stays missing: unsupported, but the group directory was created.
  EXPECT_EQ(ReadQosSetting(ctx, "tos:mlx5_0:1").status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(access((cfg + "/rdma_cm/mlx5_0").c_str(), F_OK), 0);
  ASSERT_TRUE(WriteFile(cfg + "/rdma_cm/mlx5_0/ports/1/default_roce_tos", "0\n"));
  ASSERT_TRUE(WriteQosSetting(ctx, "tos:mlx5_0:1", "106").ok());
  EXPECT_EQ(*ReadQosSetting(ctx, "tos:mlx5_0:1"), "106");
}

TEST(QosSettingsTest, QosSettingWritesNeverLeaveTheSysfsOrConfigfsRootThroughASymlink) {
  TempDir t;
  const std::string sys = t.path() + "/sys", cfg = t.path() + "/config", victim = t.path() + "/victim";
  ASSERT_TRUE(WriteFile(victim, "precious\n"));
  // Kernel-shaped inside links are followed: class/net/<pf> -> ../../devices/.../net/<pf>.
  ASSERT_TRUE(WriteFile(sys + "/devices/pci0000:00/0000:00:01.0/net/pf0/ecn/roce_np/enable/3", "0\n"));
  ASSERT_EQ(std::system(("mkdir -p " + sys + "/class/net " + sys + "/class/infiniband/mlx5_0/tc/1 " +
                         cfg + "/rdma_cm/mlx5_0/ports").c_str()), 0);
  ASSERT_EQ(symlink("../../devices/pci0000:00/0000:00:01.0/net/pf0", (sys + "/class/net/pf0").c_str()), 0);
  // And links out of the root, as a tree someone else writes could hold.
  ASSERT_EQ(symlink(victim.c_str(), (sys + "/devices/pci0000:00/0000:00:01.0/net/pf0/ecn/roce_np/enable/4").c_str()), 0);
  ASSERT_EQ(symlink("../../../../../../victim", (sys + "/class/infiniband/mlx5_0/tc/1/traffic_class").c_str()), 0);
  ASSERT_EQ(symlink(t.path().c_str(), (cfg + "/rdma_cm/mlx5_0/ports/1").c_str()), 0);
  ASSERT_TRUE(WriteFile(t.path() + "/default_roce_tos", "0\n"));
  ASSERT_EQ(symlink(t.path().c_str(), (cfg + "/rdma_cm/mlx5_9").c_str()), 0);
  QosSettingContext ctx{nullptr, sys, sys, cfg};
  ASSERT_TRUE(WriteQosSetting(ctx, "ecn:pf0:np:3", "1").ok());
  EXPECT_EQ(ReadFile(sys + "/devices/pci0000:00/0000:00:01.0/net/pf0/ecn/roce_np/enable/3"), "1");
  for (std::string id : {"ecn:pf0:np:4", "tc:mlx5_0:1", "tos:mlx5_0:1", "tos:mlx5_9:1"}) {
    Status s = WriteQosSetting(ctx, id, "7");
    EXPECT_FALSE(s.ok()) << id;
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << id << ": " << s.ToString();
    EXPECT_FALSE(ReadQosSetting(ctx, id).ok()) << id;
  }
  EXPECT_EQ(ReadFile(victim), "precious");
  EXPECT_EQ(ReadFile(t.path() + "/default_roce_tos"), "0");
  EXPECT_NE(access((t.path() + "/mlx5_9").c_str(), F_OK), 0) << "no mkdir through the link either";
}

}  // namespace
}  // namespace rdmak8s::cni
