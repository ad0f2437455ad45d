// TempDir: a fresh directory under $TMPDIR (or /tmp), removed with everything in it on
// destruction. Short paths (unix sockets fit), unique per test so ctest -j is safe.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace rdmak8s::testing {

class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/rk8s.XXXXXX";
    if (char* p = ::mkdtemp(tmpl.data())) path_ = p;
  }
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
