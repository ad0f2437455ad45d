// Scratch files for the fuzz targets whose parser reads a path (a kubeconfig, the node check's
// results, a pod record): one private directory per process, on tmpfs when there is one, removed
// at exit; the input written to a file in it before each run.
#pragma once

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"

namespace rdmak8s::fuzz {

inline const std::string& ScratchDir() {
  // Never destroyed: the atexit cleanup runs after static destructors would have.
  static const std::string& dir = *new std::string([] {
    namespace fs = std::filesystem;
    std::string base = fs::is_directory("/dev/shm") ? "/dev/shm" : fs::temp_directory_path().string();
    std::string tmpl = base + "/rdmak8s-fuzz-XXXXXX";
    FUZZ_CHECK(mkdtemp(tmpl.data()) != nullptr, "mkdtemp " + tmpl);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(ScratchDir(), ec);
    });
    return tmpl;
  }());
  return dir;
}

inline void WriteInput(const std::string& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  FUZZ_CHECK(out.good(), "write " + path);
}

}  // namespace rdmak8s::fuzz
