// Helpers for the CNI tests: temp dirs and copies of fixture trees.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "support/temp_dir.h"
#include "support/test_dirs.h"

namespace rdmak8s::cni::testing {

using rdmak8s::testing::TempDir;

// Copies tests/fixtures/sysfs/<name> (keeping relative symlinks) to <dst>. In process, not by
// `cp -a`: a fork of a sanitized test costs more than the copy.
inline bool CopyFixture(const std::string& name, const std::string& dst) {
  std::error_code ec;
  std::filesystem::copy(std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/" + name, dst,
                        std::filesystem::copy_options::recursive |
                            std::filesystem::copy_options::copy_symlinks,
                        ec);
  return !ec;
}

inline bool WriteFile(const std::string& path, const std::string& data) {
  std::error_code ec;
  std::filesystem::create_directories(path.substr(0, path.rfind('/')), ec);
  if (ec) return false;
  std::ofstream f(path);
  f << data;
  return static_cast<bool>(f);
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace rdmak8s::cni::testing
