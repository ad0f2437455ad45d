#include "rdmak8s/base/numbers.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

namespace rdmak8s {
namespace {

struct UnsignedCase {
  const char* text;
  NumberBase base;
  std::optional<uint64_t> want;  // nullopt: an error
  const char* message;           // the error's message, when want is nullopt
};

TEST(NumbersTest, ParsesUnsignedStrictlyAndSaysWhyNot) {
  const UnsignedCase cases[] = {
      {"26", NumberBase::kDecimal, 26, ""},
      {"0", NumberBase::kDecimal, 0, ""},
      {"007", NumberBase::kDecimal, 7, ""},  // leading zeros, as kstrtoul reads them
      {"18446744073709551615", NumberBase::kDecimal, UINT64_MAX, ""},
      {"18446744073709551616", NumberBase::kDecimal, std::nullopt,
       "n: \"18446744073709551616\" is out of range 0..18446744073709551615"},
      {"12abc", NumberBase::kDecimal, std::nullopt, "n: \"12abc\" is not a number"},
      {"12 ", NumberBase::kDecimal, std::nullopt, "n: \"12 \" is not a number"},
      {" 12", NumberBase::kDecimal, std::nullopt, "n: \" 12\" is not a number"},
      {"12\n", NumberBase::kDecimal, std::nullopt, "n: \"12\n\" is not a number"},
      {"", NumberBase::kDecimal, std::nullopt, "n: empty, not a number"},
      {"-1", NumberBase::kDecimal, std::nullopt,
       "n: \"-1\" has a sign, an unsigned number is wanted"},
      {"+1", NumberBase::kDecimal, std::nullopt,
       "n: \"+1\" has a sign, an unsigned number is wanted"},
      {"1.5", NumberBase::kDecimal, std::nullopt, "n: \"1.5\" is not a number"},
      {"0x1a", NumberBase::kDecimal, std::nullopt, "n: \"0x1a\" is not a number"},
      {"1a", NumberBase::kHex, 0x1a, ""},
      {"FFFF", NumberBase::kHex, 0xffff, ""},
      {"0x1a", NumberBase::kHex, std::nullopt, "n: \"0x1a\" is not a number"},
      {"1g", NumberBase::kHex, std::nullopt, "n: \"1g\" is not a number"},
      {"0x15b3", NumberBase::kPrefixed, 0x15b3, ""},
      {"0XFFFF", NumberBase::kPrefixed, 0xffff, ""},
      {"26", NumberBase::kPrefixed, 26, ""},
      {"0x", NumberBase::kPrefixed, std::nullopt, "n: \"0x\" is not a number (no digits after 0x)"},
      {"0x-1", NumberBase::kPrefixed, std::nullopt,
       "n: \"0x-1\" has a sign, an unsigned number is wanted"},
      {"0x1z", NumberBase::kPrefixed, std::nullopt, "n: \"0x1z\" is not a number"},
  };
  for (const UnsignedCase& c : cases) {
    StatusOr<uint64_t> v = ParseUnsigned<uint64_t>(c.text, "n", c.base);
    if (c.want) {
      ASSERT_TRUE(v.ok()) << '"' << c.text << "\": " << v.status().ToString();
      EXPECT_EQ(*v, *c.want) << c.text;
    } else {
      ASSERT_FALSE(v.ok()) << '"' << c.text << "\" gave " << *v;
      EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument) << c.text;
      EXPECT_EQ(v.status().message(), c.message);
    }
  }
}

TEST(NumbersTest, ChecksTheCallersTypeRangeNotJust64Bits) {
  EXPECT_EQ(*ParseUnsigned<uint8_t>("255", "pfc priority"), 255);
  StatusOr<uint8_t> big = ParseUnsigned<uint8_t>("256", "pfc priority");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().message(), "pfc priority: \"256\" is out of range 0..255");
  EXPECT_EQ(*ParseUnsigned<uint16_t>("ffff", "pkey", NumberBase::kHex), 0xffff);
  EXPECT_FALSE(ParseUnsigned<uint16_t>("10000", "pkey", NumberBase::kHex).ok());
  EXPECT_EQ(*ParseUnsigned<uint32_t>("4294967295", "n"), UINT32_MAX);
  EXPECT_FALSE(ParseUnsigned<uint32_t>("4294967296", "n").ok());
}

TEST(NumbersTest, ParsesSignedStrictly) {
  EXPECT_EQ(*ParseSigned<int32_t>("-1", "numa_node"), -1);
  EXPECT_EQ(*ParseSigned<int32_t>("0", "numa_node"), 0);
  EXPECT_EQ(*ParseSigned<int64_t>("-9223372036854775808", "n"), INT64_MIN);
  const std::pair<const char*, const char*> bad[] = {
      {"+1", "numa_node: \"+1\" is not a number (a '+' sign)"},
      {"-", "numa_node: \"-\" is not a number"},
      {"1-", "numa_node: \"1-\" is not a number"},
      {"--1", "numa_node: \"--1\" is not a number"},
      {"", "numa_node: empty, not a number"},
      {"-129", "numa_node: \"-129\" is out of range -128..127"},
      {"128", "numa_node: \"128\" is out of range -128..127"},
  };
  for (const auto& [text, message] : bad) {
    StatusOr<int8_t> v = ParseSigned<int8_t>(text, "numa_node");
    ASSERT_FALSE(v.ok()) << text;
    EXPECT_EQ(v.status().message(), message);
  }
  StatusOr<int64_t> huge = ParseSigned<int64_t>("99999999999999999999", "n");
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().message(),
            "n: \"99999999999999999999\" is out of range -9223372036854775808..9223372036854775807");
}

TEST(NumbersTest, RangeIsTheCallersDomain) {
  EXPECT_EQ(*ParseUnsignedInRange("1500", "--fabric-mtu", 68, 65535), 1500u);
  StatusOr<uint64_t> small = ParseUnsignedInRange("67", "--fabric-mtu", 68, 65535);
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.status().message(), "--fabric-mtu: \"67\" is out of range 68..65535");
  EXPECT_EQ(ParseUnsignedInRange("12abc", "dscp", 0, 63).status().message(),
            "dscp: \"12abc\" is not a number");
}

// The sysfs forms keep their names (sysfs_attr.h): "0x" is hex, otherwise decimal; ParseInt signed.
TEST(NumbersTest, SysfsFormsAreThePrefixedAndSigned64BitParsers) {
  EXPECT_EQ(*ParseUint("0x15b3", "vendor"), 0x15b3u);
  EXPECT_EQ(*ParseUint("4", "port"), 4u);
  EXPECT_FALSE(ParseUint("4\n", "port").ok());
  EXPECT_EQ(*ParseInt("-1", "numa_node"), -1);
}

}  // namespace
}  // namespace rdmak8s
