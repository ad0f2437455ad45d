// Helpers for the CNI tests: temp dirs and copies of fixture trees.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace rdmak8s::cni::testing {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/rdmak8s-cni-XXXXXX";
    path_ = mkdtemp(tmpl) ? tmpl : "";
  }
  ~TempDir() {
    if (!path_.empty()) std::system(("rm -rf '" + path_ + "'").c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Copies tests/fixtures/sysfs/<name> (keeping relative symlinks) to <dst>.
inline bool CopyFixture(const std::string& name, const std::string& dst) {
  std::string cmd = std::string("cp -a '") + RDMAK8S_FIXTURES_DIR + "/sysfs/" + name + "' '" + dst + "'";
  return std::system(cmd.c_str()) == 0;
}

inline bool WriteFile(const std::string& path, const std::string& data) {
  std::string dir = path.substr(0, path.rfind('/'));
  if (std::system(("mkdir -p '" + dir + "'").c_str()) != 0) return false;
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
