#include "device-plugin/nfd_features.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "rdmak8s/base/file_util.h"

namespace rdmak8s::dp {
namespace {

constexpr const char* kPrefix = "rdma.rdmak8s.io/";

// The feature file holds a few labels; anything larger at its path is not ours.
constexpr size_t kMaxNfdFileBytes = 64 * 1024;

void SyncDir(const std::string& dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // best effort: the rename is visible already
  (void)fsync(fd);
  close(fd);
}

}  // namespace

std::string RenderNfdFeatures(const NodeFeatures& features) {
  std::string out;
  for (Transport t : features.transports) {
    if (t == Transport::kUnknown) continue;
    out += std::string(kPrefix) + "transport-" + std::string(TransportName(t)) + "=true\n";
  }
  if (out.empty()) return "";
  if (features.netns_mode) {
    out += std::string(kPrefix) + "netns-mode=" + std::string(RdmaNetnsModeName(*features.netns_mode)) + "\n";
  }
  if (features.lossless_ready) {
    out += std::string(kPrefix) + "lossless-ready=" + (*features.lossless_ready ? "true" : "false") + "\n";
  }
  return "# rdmak8s-device-plugin: removed when it stops advertising devices\n" + out;
}

Status NfdFeatureFile::Update(const NodeFeatures& features) {
  if (dir_.empty()) return Status::Ok();
  const std::string text = RenderNfdFeatures(features);
  if (text.empty()) return Remove();
  const std::string target = path();
  // Read back through the one safe reader: the features dir is shared with NFD, and a FIFO or
  // link planted at our file's name must neither block the plugin nor be taken for our file.
  StatusOr<std::string> current = ReadRegularFile(target, kMaxNfdFileBytes);
  if (current.ok() && *current == text) return Status::Ok();
  if (!current.ok() && current.status().code() != StatusCode::kNotFound) {
    return current.status().Prepend("NFD feature file " + target + " (not replaced)");
  }
  // NFD skips dot-files, so neither the staging file nor WriteFileAtomic's temporary beside it
  // (".rdmak8s.tmp.<pid>...") is ever read as features.
  const std::string staged = dir_ + "/." + kNfdFeatureFileName;
  Status s = WriteFileAtomic(staged, text, 0644);
  if (!s.ok()) return s.Prepend("NFD feature file");
  if (std::rename(staged.c_str(), target.c_str()) != 0) {
    int err = errno;
    unlink(staged.c_str());
    return ErrnoError(err, "NFD feature file: rename " + staged + " to " + target);
  }
  SyncDir(dir_);
  return Status::Ok();
}

Status NfdFeatureFile::Remove() {
  if (dir_.empty()) return Status::Ok();
  const std::string target = path();
  if (unlink(target.c_str()) != 0 && errno != ENOENT) {
    return ErrnoError(errno, "NFD feature file: remove " + target);
  }
  return Status::Ok();
}

}  // namespace rdmak8s::dp
