// Small file helpers shared by the binaries: the one atomic file write, the one safe file reader,
// opening a path that must stay beneath a root, and the private directories of our state.
//
// Every whole-file read of the project goes through ReadRegularFile (ReadConfigFile for an
// admin's file that may be a ConfigMap/Secret link; OpenBeneath + ReadFd where the path must stay
// inside a root): our records, CDI specs, NFD features, the node check's results, configs, the
// API token and kubeconfig, the node check's --qos-file. Sysfs and procfs attributes are not
// files in this sense (no size, never a FIFO): they are read by sysfs_attr.h, the sysfs reader.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>

#include <functional>
#include <string>
#include <string_view>

#include "rdmak8s/base/status.h"

namespace rdmak8s {

// Replaces `path` with `data` so that a reader, or a crash at any point, sees either the old
// content or the new, never a mix: write a temporary file beside it, fsync it, rename it over
// `path`, then fsync the directory (best effort: the rename is already visible). The temporary
// is created with O_CREAT|O_EXCL|O_NOFOLLOW (a name planted in the directory, a symlink above
// all, is never opened: another name is tried), unique per process and thread so concurrent
// writers don't clobber each other's temporaries, and gets exactly `mode` whatever the umask.
// On failure the temporary is removed and `path` is untouched; the Status names the step and the
// file.
Status WriteFileAtomic(const std::string& path, std::string_view data, mode_t mode = 0644);

enum class BeneathMethod {
  kAuto,  // openat2(2) RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS; kWalk where the kernel lacks it
  kWalk,  // component by component with O_NOFOLLOW (tests of the fallback)
};

// Opens `rel`, a path relative to the directory `root`, so that resolution never leaves `root`:
// symlinks are followed only while they stay inside it (a relative link, as sysfs's
// class/net/<netdev> -> ../../devices/...; an absolute link, a magic link or a ".." above `root`
// fails), as openat2(2) with RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS does (Linux 5.6+); on older
// kernels the same rule is applied by walking each component with O_NOFOLLOW. `flags` are
// open(2)'s (O_CLOEXEC is added; O_CREAT is not supported). Returns the fd, which the caller
// closes. Errors name root and rel: kNotFound for a missing component; leaving the root is
// FailedPrecondition.
StatusOr<int> OpenBeneath(const std::string& root, std::string_view rel, int flags,
                          BeneathMethod method = BeneathMethod::kAuto);

// Makes `path` and its missing parents directories. Each one this call creates gets exactly
// its mode whatever the process's umask: `mode` for `path` itself, 0755 for a parent (a
// directory of the node's, not ours alone); one that exists is left as it is. A component that
// exists but is not a directory is FailedPrecondition naming it; other errors name the mkdir or
// chmod that failed.
Status MakeDirs(const std::string& path, mode_t mode);

// Makes `path` a directory only the user we run as can use: missing, it is created 0700 (its
// missing parents 0755, by MakeDirs); existing, it must be a directory itself (not a symlink) owned by that
// user, and is tightened to 0700 when group or others had access. A symlink, another owner or a
// non-directory is refused (FailedPrecondition naming the path): whoever controls the directory
// controls what we read back from it.
Status EnsurePrivateDir(const std::string& path);

// What a file or directory only we could have written looks like (records the DRA driver and the
// CNI hand each other on the node's disk): of the type wanted (`want_dir`), owned by the user we
// run as, and writable by nobody else. kFailedPrecondition naming the path and what is wrong.
Status CheckOwnedByUs(const std::string& path, const struct stat& st, bool want_dir);
// CheckOwnedByUs on the directory `path` itself, never through a symlink (lstat): kNotFound when
// missing, kFailedPrecondition for a symlink or an untrusted directory.
Status CheckOwnedDir(const std::string& path);

// Reads `fd` from its current offset to end of file (EINTR retried); the fd stays open, the
// caller closes it. `path` only names the file in errors (empty: errors say only what failed).
// More than `max_bytes` is InvalidArgument (a file we parse is small; a huge one is not ours).
StatusOr<std::string> ReadFd(int fd, const std::string& path, size_t max_bytes = SIZE_MAX);
// Whether the one safe reader below follows a symlink at the path's last component.
enum class FileLinks {
  kRefuse,  // O_NOFOLLOW: our own files (state, records, CDI specs, NFD features) are never links
  kFollow,  // an admin's file mounted from a ConfigMap is a link into ..data/
};

// The one reader of a file at a path someone else could have put something at: opened
// O_RDONLY|O_CLOEXEC|O_NONBLOCK (a FIFO or device at the path can never block the caller), with
// O_NOFOLLOW unless `links` is kFollow, then fstat'ed on the descriptor: only a regular file is
// read, and only when it holds at most `max_bytes` (checked before the read and while reading, so
// a file that grows is cut off too). `trust`, when given, judges the opened file's stat (owner,
// mode) before a byte is read; its Status is returned as it is. Errors say what failed but not
// the path, which the caller prepends with what the file is for: kNotFound when missing,
// kFailedPrecondition for a symlink (kRefuse), a FIFO, a directory or any other non-regular
// file, kInvalidArgument when larger than `max_bytes`, the errno's code otherwise.
StatusOr<std::string> ReadRegularFile(const std::string& path, size_t max_bytes,
                                      FileLinks links = FileLinks::kRefuse,
                                      const std::function<Status(const struct stat&)>& trust = {});
// A configuration file an admin wrote (the device plugin's --config, the DRA driver's --devices):
// ReadRegularFile following links (a ConfigMap volume's file is a link into ..data/), at most
// `max_bytes`. Errors as ReadRegularFile's: the caller prepends what the file is for
// ("config /etc/x.json: open: No such file or directory").
StatusOr<std::string> ReadConfigFile(const std::string& path, size_t max_bytes = size_t{1} << 20);
// Path helpers, lexical (no filesystem access): what follows the last '/' ("a/b" -> "b", "b" ->
// "b"), and what precedes it ("a/b" -> "a", "b" -> "").
std::string Basename(std::string_view path);
std::string Dirname(std::string_view path);

}  // namespace rdmak8s
