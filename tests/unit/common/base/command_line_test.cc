// rdmak8s::ParseCommandLine: `--flag=` is the flag with an empty value, an empty number is
// refused naming the flag, `--print-flags` prints what the binary would run with.
#include "rdmak8s/base/command_line.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace rdmak8s {
namespace {

struct Flags {
  std::string dir = "/default";
  std::string address = "127.0.0.1:9470";
  double poll = 2;
  int mtu = 0;
  CLI::App app{"test"};
  Flags() {
    app.add_option("--dir", dir, "a path; empty disables")->capture_default_str();
    app.add_option("--metrics-address", address, "host:port; empty disables")->capture_default_str();
    app.add_option("--port-poll-interval", poll, "seconds")->capture_default_str()->check(CLI::Range(0.0, 10.0));
    CLI::App* check = app.add_subcommand("check", "a verb");
    check->add_option("--fabric-mtu", mtu, "bytes");
  }
  std::optional<int> Parse(std::vector<std::string> args) {
    args.insert(args.begin(), "binary");
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    return ParseCommandLine(app, static_cast<int>(argv.size()), argv.data());
  }
};

TEST(ParseCommandLineTest, FlagEqualsNothingIsTheFlagWithAnEmptyValue) {
  Flags f;
  EXPECT_EQ(f.Parse({"--dir=", "--metrics-address="}), std::nullopt);
  EXPECT_EQ(f.dir, "");
  EXPECT_EQ(f.address, "");
}

TEST(ParseCommandLineTest, ValuesAndTheirOtherFormsAreReadAsCli11ReadsThem) {
  Flags f;
  EXPECT_EQ(f.Parse({"--dir=/x", "--metrics-address", "", "--port-poll-interval=0.5"}), std::nullopt);
  EXPECT_EQ(f.dir, "/x");
  EXPECT_EQ(f.address, "");
  EXPECT_EQ(f.poll, 0.5);
}

TEST(ParseCommandLineTest, AnEmptyNumberIsRefusedNamingTheFlagInEitherForm) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--port-poll-interval="}, {"--port-poll-interval", ""}}) {
    Flags f;
    ::testing::internal::CaptureStderr();
    std::optional<int> rc = f.Parse(args);
    const std::string err = ::testing::internal::GetCapturedStderr();
    ASSERT_TRUE(rc.has_value());
    EXPECT_NE(*rc, 0);
    EXPECT_NE(err.find("--port-poll-interval: an empty value: a number is needed"), std::string::npos) << err;
    EXPECT_EQ(f.poll, 2) << "CLI11 alone reads an empty number as 0";
  }
  Flags f;
  ::testing::internal::CaptureStderr();
  std::optional<int> rc = f.Parse({"check", "--fabric-mtu="});
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(rc.has_value());
  EXPECT_NE(err.find("--fabric-mtu: an empty value: a number is needed"), std::string::npos) << err;
}

TEST(ParseCommandLineTest, PrintFlagsPrintsEveryValueAsParsedAndExitsZero) {
  Flags f;
  ::testing::internal::CaptureStdout();
  std::optional<int> rc = f.Parse({"--dir=", "--print-flags"});
  const std::string out = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(rc, std::optional<int>(0));
  EXPECT_NE(out.find("dir=\"\"\n"), std::string::npos) << out;
  EXPECT_NE(out.find("metrics-address=\"127.0.0.1:9470\"\n"), std::string::npos) << out;
  EXPECT_NE(out.find("port-poll-interval=2\n"), std::string::npos) << out;
}

}  // namespace
}  // namespace rdmak8s
