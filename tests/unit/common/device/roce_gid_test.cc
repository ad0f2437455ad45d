#include "rdmak8s/device/roce_gid.h"

#include <gtest/gtest.h>

#include <cstring>

namespace rdmak8s {
namespace {

TEST(RoceGidTest, GidForIpMapsV4AndV6) {
  EXPECT_EQ(GidForIp("10.0.0.2"), "0000:0000:0000:0000:0000:ffff:0a00:0002");
  EXPECT_EQ(GidForIp("fe80::1"), "fe80:0000:0000:0000:0000:0000:0000:0001");
  EXPECT_EQ(GidForIp("nope"), "");
  EXPECT_EQ(GidForIp("0000:0000:0000:0000:0000:ffff:0a00:0002"), "0000:0000:0000:0000:0000:ffff:0a00:0002");
}

TEST(RoceGidTest, ParseGidReadsWhatGidForIpPrints) {
  unsigned char b[16] = {0};
  ASSERT_TRUE(ParseGid(GidForIp("10.0.0.2"), b));
  const unsigned char want[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};
  EXPECT_EQ(std::memcmp(b, want, 16), 0);
  EXPECT_FALSE(ParseGid("not a gid", b));
}

}  // namespace
}  // namespace rdmak8s
