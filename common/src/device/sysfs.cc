#include "device/sysfs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "rdmak8s/base/file_util.h"
#include "rdmak8s/device/sysfs_attr.h"

namespace rdmak8s::internal {

namespace {

// The error of `op` on `rel` relative to `dirfd` (AT_FDCWD: `rel` is a path), named `shown`.
Status ErrorAt(int dirfd, int err, std::string_view op, const std::string& rel,
               const std::string& shown) {
  std::string what = std::string(op) + " " + shown;
  if (err == ENOENT && !rel.empty()) {
    // A name that exists but resolves nowhere is broken, not missing.
    struct stat st;
    if (::fstatat(dirfd, rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      return InternalError(what + ": dangling symlink").WithErrno(err);
    }
  }
  return ErrnoError(err, what).WithErrno(err);
}

// Reads the open attribute `fd` (closed here) to its end; errors name `shown`.
StatusOr<std::string> ReadAttrFd(int fd, int dirfd, const std::string& rel, const std::string& shown) {
  // sysfs attributes are at most a page; regular files (fixtures) are read to the end.
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return ErrorAt(dirfd, err, "read", rel, shown);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    // A short read is the end: sysfs hands out a whole attribute (at most a page) in one read,
    // and a regular file reads short only at EOF. Saves a read(2) per attribute.
    if (static_cast<size_t>(n) < sizeof(buf)) break;
    if (out.size() > (1u << 20)) break;  // not a sysfs attribute; don't read forever
  }
  ::close(fd);
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
  return out;
}

// The one attribute reader: `rel` relative to `dirfd` (AT_FDCWD: a path), named `shown`.
StatusOr<std::string> ReadAttrAt(int dirfd, const std::string& rel, const std::string& shown) {
  int fd = ::openat(dirfd, rel.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrorAt(dirfd, errno, "read", rel, shown);
  return ReadAttrFd(fd, dirfd, rel, shown);
}

}  // namespace

StatusOr<std::string> ReadLinkPath(const std::string& path) {
  char buf[4096];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof(buf) - 1);
  if (n < 0) return ErrnoError(errno, "readlink " + path).WithErrno(errno);
  return std::string(buf, static_cast<size_t>(n));
}

namespace {

// Entry names of the open directory `fd` (closed here) via getdents64(2) directly: readdir(3)
// would add an fstat and two fcntl calls per listing (fdopendir's checks). Returns the errno of a
// failed getdents64, 0 on success.
int ListFd(int fd, std::vector<std::string>* names) {
  alignas(8) char buf[16384];
  int err = 0;
  for (;;) {
    long n = ::syscall(SYS_getdents64, fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      err = errno;
      break;
    }
    if (n == 0) break;
    for (long off = 0; off < n;) {
      // struct linux_dirent64: u64 d_ino, s64 d_off, u16 d_reclen, u8 d_type, char d_name[].
      unsigned short reclen;
      std::memcpy(&reclen, buf + off + 16, sizeof(reclen));
      const char* name = buf + off + 19;
      if (std::strcmp(name, ".") != 0 && std::strcmp(name, "..") != 0) names->emplace_back(name);
      off += reclen;
    }
  }
  ::close(fd);
  return err;
}

}  // namespace

StatusOr<std::vector<std::string>> ListPath(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "list " + path).WithErrno(errno);
  std::vector<std::string> names;
  if (int err = ListFd(fd, &names); err != 0) return ErrnoError(err, "list " + path).WithErrno(err);
  return names;
}

}  // namespace rdmak8s::internal

namespace rdmak8s {

StatusOr<SysfsDir> SysfsDir::Open(std::string path) {
  int fd = ::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "open " + path);
  return SysfsDir(fd, std::move(path));
}

SysfsDir::SysfsDir(SysfsDir&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) {
  other.fd_ = -1;
}

SysfsDir& SysfsDir::operator=(SysfsDir&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

SysfsDir::~SysfsDir() {
  if (fd_ >= 0) ::close(fd_);
}

std::string SysfsDir::PathOf(std::string_view rel) const {
  if (rel.empty()) return path_;
  std::string p = path_;
  p += '/';
  p += rel;
  return p;
}

Status SysfsDir::ErrorFor(int err, std::string_view op, std::string_view rel) const {
  return internal::ErrorAt(fd_, err, op, std::string(rel), PathOf(rel));
}

StatusOr<std::string> SysfsDir::Read(std::string_view rel) const {
  return internal::ReadAttrAt(fd_, std::string(rel), PathOf(rel));
}

StatusOr<std::optional<std::string>> SysfsDir::ReadOptional(std::string_view rel) const {
  StatusOr<std::string> r = Read(rel);
  if (r.ok()) return std::optional<std::string>(std::move(r).value());
  if (r.status().code() == StatusCode::kNotFound) return std::optional<std::string>();
  return r.status();
}

StatusOr<std::string> SysfsDir::ReadLink(std::string_view rel) const {
  std::string rel_s(rel);
  char buf[4096];
  ssize_t n = ::readlinkat(fd_, rel_s.c_str(), buf, sizeof(buf) - 1);
  if (n < 0) return ErrnoError(errno, "readlink " + PathOf(rel)).WithErrno(errno);
  return std::string(buf, static_cast<size_t>(n));
}

StatusOr<std::vector<std::string>> SysfsDir::List(std::string_view rel) const {
  std::string rel_s = rel.empty() ? std::string(".") : std::string(rel);
  int fd = ::openat(fd_, rel_s.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrorFor(errno, "list", rel);
  std::vector<std::string> names;
  if (int err = internal::ListFd(fd, &names); err != 0) return ErrorFor(err, "list", rel);
  return names;
}

StatusOr<SysfsDir> SysfsDir::Sub(std::string_view rel) const {
  std::string rel_s(rel);
  int fd = ::openat(fd_, rel_s.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrorFor(errno, "open", rel);
  return SysfsDir(fd, PathOf(rel));
}

StatusOr<std::string> ReadSysfsAttr(const std::string& path) {
  return internal::ReadAttrAt(AT_FDCWD, path, path);
}

StatusOr<std::string> ReadSysfsAttrBeneath(const std::string& root, const std::string& rel) {
  const std::string path = root + "/" + rel;
  StatusOr<int> fd = OpenBeneath(root, rel, O_RDONLY);
  if (!fd.ok()) return fd.status();
  return internal::ReadAttrFd(*fd, AT_FDCWD, path, path);
}

StatusOr<std::vector<std::string>> ListSysfsDir(const std::string& path) {
  RDMAK8S_ASSIGN_OR_RETURN(std::vector<std::string> names, internal::ListPath(path));
  std::sort(names.begin(), names.end());
  return names;
}

std::string ResolveInSysfsTree(const std::string& root, const std::string& rel) {
  namespace fs = std::filesystem;
  fs::path cur;
  for (const auto& part : fs::path(rel)) {
    fs::path next = cur / part;
    StatusOr<std::string> target = internal::ReadLinkPath(root + "/" + next.string());
    if (target.ok()) {
      if (target->empty() || target->front() == '/') return "";  // leaves the tree
      next = (cur / *target).lexically_normal();
      if (next.empty() || *next.begin() == "..") return "";
    } else if (target.status().code() != StatusCode::kInvalidArgument) {  // EINVAL: not a link
      return "";
    }
    cur = next;
  }
  return cur.string();
}

}  // namespace rdmak8s

namespace rdmak8s::internal {

StatusOr<NumberedName> ParseNumberedName(std::string_view text, std::string_view what) {
  size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    return InvalidArgumentError(std::string(what) + ": expected \"<n>: <name>\", got \"" +
                                std::string(text) + "\"");
  }
  RDMAK8S_ASSIGN_OR_RETURN(uint64_t n, ParseUint(text.substr(0, colon), what));
  std::string_view name = text.substr(colon + 1);
  while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
  return NumberedName{static_cast<uint32_t>(n), std::string(name)};
}

}  // namespace rdmak8s::internal

