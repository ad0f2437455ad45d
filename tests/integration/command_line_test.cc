// The flags tables of docs/device-plugin.md and docs/dra.md against the binaries' own parsers:
// each documented flag exists, its documented default is what the binary runs with, its
// documented empty form (`--flag=`) is accepted as empty, and an empty number is refused naming
// the flag. A review found `--nfd-features-dir=` refused although the docs said empty disables.
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include "support/test_dirs.h"

namespace rdmak8s {
namespace {

struct BinaryRun {
  int exit_code = -1;
  std::string out;  // stdout and stderr
};

BinaryRun RunBinary(const std::string& binary, const std::string& args) {
  BinaryRun r;
  FILE* p = popen((binary + " " + args + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// --print-flags' TOML lines, `name=value`, string values unquoted.
std::map<std::string, std::string> PrintedFlags(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string value = line.substr(eq + 1);
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    out[line.substr(0, eq)] = value;
  }
  return out;
}

struct FlagRow {
  std::string flag;          // --name
  std::string default_text;  // as the table says it
  std::string meaning;
};

// The rows of the "## Flags" table of `doc` (`| `--flag ARG` | default | meaning |`).
std::vector<FlagRow> FlagsTable(const std::string& doc) {
  std::ifstream in(std::string(RDMAK8S_SOURCE_DIR) + "/docs/" + doc);
  std::vector<FlagRow> rows;
  std::string line;
  bool in_section = false;
  const std::regex row(R"(^\| `(--[a-z0-9-]+)[^`]*` \| ([^|]*) \| (.*) \|$)");
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## Flags";
    std::smatch m;
    if (in_section && std::regex_match(line, m, row)) rows.push_back({m[1], m[2], m[3]});
  }
  return rows;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == ' ')) s.pop_back();
  while (!s.empty() && (s.front() == ' ')) s.erase(0, 1);
  return s;
}

bool IsNumber(const std::string& s) { return std::regex_match(s, std::regex(R"(-?[0-9]+(\.[0-9]+)?)")); }

void CheckTableAgainstParser(const std::string& doc, const std::string& binary) {
  const std::vector<FlagRow> rows = FlagsTable(doc);
  ASSERT_GE(rows.size(), 10u) << doc << ": no flags table found";
  BinaryRun defaults = RunBinary(binary, "--print-flags");
  ASSERT_EQ(defaults.exit_code, 0) << defaults.out;
  const std::map<std::string, std::string> printed = PrintedFlags(defaults.out);
  for (const FlagRow& r : rows) {
    SCOPED_TRACE(doc + " " + r.flag);
    const std::string name = r.flag.substr(2);
    auto it = printed.find(name);
    ASSERT_NE(it, printed.end()) << "the binary has no " << r.flag << ":\n" << defaults.out;
    const std::string d = Trim(r.default_text);
    if (d == "none") {
      EXPECT_EQ(it->second, "");
    } else if (d == "off") {
      EXPECT_EQ(it->second, "false");
    } else if (d.size() >= 2 && d.front() == '`' && d.back() == '`') {
      EXPECT_EQ(it->second, d.substr(1, d.size() - 2));
    }
    if (d == "none" || r.meaning.find("empty disables") != std::string::npos ||
        r.meaning.find("empty: ") != std::string::npos) {
      BinaryRun empty = RunBinary(binary, r.flag + "= --print-flags");
      EXPECT_EQ(empty.exit_code, 0) << empty.out;
      EXPECT_EQ(PrintedFlags(empty.out)[name], "") << empty.out;
    }
    if (IsNumber(it->second)) {
      BinaryRun empty = RunBinary(binary, r.flag + "=");
      EXPECT_NE(empty.exit_code, 0) << empty.out;
      EXPECT_NE(empty.out.find(r.flag + ": an empty value: a number is needed"), std::string::npos) << empty.out;
    }
  }
}

TEST(CommandLineTest, TheDevicePluginsFlagsAreAsItsDocsSay) {
  CheckTableAgainstParser("device-plugin.md",
                          std::string(RDMAK8S_BINARY_DIR) + "/device-plugin/rdmak8s-device-plugin");
}

TEST(CommandLineTest, TheDraDriversFlagsAreAsItsDocsSay) {
  CheckTableAgainstParser("dra.md", std::string(RDMAK8S_BINARY_DIR) + "/dra/rdmak8s-dra-driver");
}

// The one the review found: `--nfd-features-dir=` was refused ("1 required TEXT:PATH missing").
TEST(CommandLineTest, AnEmptyNfdFeaturesDirIsAcceptedAndTurnsTheFeatureFileOff) {
  BinaryRun r = RunBinary(std::string(RDMAK8S_BINARY_DIR) + "/device-plugin/rdmak8s-device-plugin",
                    "--nfd-features-dir= --print-flags");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(PrintedFlags(r.out)["nfd-features-dir"], "") << r.out;
}

}  // namespace
}  // namespace rdmak8s
