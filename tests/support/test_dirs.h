// Where a test finds the build tree, the source tree and its fixtures: looked up when the test
// runs, from the test binary's own path, never compiled in. The build tree is the nearest
// directory above the binary that holds CMakeCache.txt; the source tree is the one that cache
// names (CMAKE_HOME_DIRECTORY). So a test's object is the same in every checkout, and the
// compiler cache serves a fresh clone in a new directory (CI, a newcomer's first make test)
// instead of compiling every test again. A binary outside a build tree aborts naming this.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace rdmak8s::testing {

inline const std::string& BinaryDir() {
  static const std::string dir = [] {
    std::error_code ec;
    std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
    for (p = p.parent_path(); !ec && !p.empty() && p != p.root_path(); p = p.parent_path()) {
      if (std::filesystem::exists(p / "CMakeCache.txt")) return p.string();
    }
    std::fprintf(stderr, "tests/support/test_dirs.h: no CMakeCache.txt above /proc/self/exe\n");
    std::abort();
  }();
  return dir;
}

inline const std::string& SourceDir() {
  static const std::string dir = [] {
    std::ifstream cache(BinaryDir() + "/CMakeCache.txt");
    const std::string key = "CMAKE_HOME_DIRECTORY:INTERNAL=";
    for (std::string line; std::getline(cache, line);) {
      if (line.rfind(key, 0) == 0) return line.substr(key.size());
    }
    std::fprintf(stderr, "tests/support/test_dirs.h: %s/CMakeCache.txt names no CMAKE_HOME_DIRECTORY\n",
                 BinaryDir().c_str());
    std::abort();
  }();
  return dir;
}

inline const std::string& FixturesDir() {
  static const std::string dir = SourceDir() + "/tests/fixtures";
  return dir;
}

}  // namespace rdmak8s::testing

#define RDMAK8S_BINARY_DIR (::rdmak8s::testing::BinaryDir())
#define RDMAK8S_SOURCE_DIR (::rdmak8s::testing::SourceDir())
#define RDMAK8S_FIXTURES_DIR (::rdmak8s::testing::FixturesDir())
