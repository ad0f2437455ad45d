// TempDir: a fresh directory under $TMPDIR (or /tmp), removed with everything in it on
// destruction. Short paths (unix sockets fit), unique per test so ctest -j is safe.
// NewTempDir: the same directory for a fixture that removes it itself.
//
// Every test's scratch files go here, so make test can put them all on a tmpfs (scripts/test.sh
// sets TMPDIR): sysfs, which the fixtures stand in for, is in memory too, and on a disk (ext4
// mounted with discard) creating and removing the fixture trees cost ten times the tests' own
// time.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace rdmak8s::testing {

// A new directory under $TMPDIR (or /tmp); empty when mkdtemp failed.
inline std::string NewTempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/rk8s.XXXXXX";
  if (char* p = ::mkdtemp(tmpl.data())) return p;
  return "";
}

class TempDir {
 public:
  TempDir() : path_(NewTempDir()) {}
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // Empty when mkdtemp failed (tests ASSERT on it).
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace rdmak8s::testing
