// Path flags of the binaries (rdmak8s-dra-driver, rdmak8s-device-plugin, rdmak8s-inspect),
// made absolute once, at parse time, against the directory the binary was started in. A relative
// path would otherwise mean different things to different parts of one process (gRPC reads a
// relative "unix:" URI its own way: `--plugin-dir plug` failed to listen), and nothing the
// binary tells kubelet or writes in a CDI spec may depend on its working directory.
//
// Use: app.add_option("--state-dir", dir)->transform(rdmak8s::AbsolutePath()). An empty value
// stays empty (the flag's "not set"). Header-only: only the binaries' mains link CLI11.
#pragma once

#include <filesystem>
#include <string>
#include <system_error>

#include <CLI/CLI.hpp>

namespace rdmak8s {

// `path` made absolute (against the working directory) and lexically normal, without a
// trailing '/'; "" stays "". Sets `error` (naming the path and the cause) when the working
// directory cannot be read.
inline std::string MakeAbsolutePath(const std::string& path, std::string* error) {
  if (path.empty()) return path;
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(path, ec);
  if (ec) {
    *error = "cannot make " + path + " absolute: " + ec.message();
    return path;
  }
  std::string out = abs.lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

// The CLI11 transform that does MakeAbsolutePath on the flag's value.
inline CLI::Validator AbsolutePath() {
  return CLI::Validator(
      [](std::string& value) {
        std::string error;
        value = MakeAbsolutePath(value, &error);
        return error;
      },
      "PATH", "AbsolutePath");
}

}  // namespace rdmak8s
