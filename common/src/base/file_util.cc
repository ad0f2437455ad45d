#include "rdmak8s/base/file_util.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <vector>

namespace rdmak8s {

namespace {

// The temporary's name: pid.tid first (readable when one is left behind by a crash), then with a
// random suffix when that name is taken.
std::string TempName(const std::string& path, int attempt) {
  std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." +
                    std::to_string(static_cast<unsigned long>(gettid()));
  if (attempt > 0) {
    unsigned long r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof r)) r = attempt;
    tmp += "." + std::to_string(r);
  }
  return tmp;
}

}  // namespace

Status WriteFileAtomic(const std::string& path, std::string_view data, mode_t mode) {
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    tmp = TempName(path, attempt);
    fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0 && (errno != EEXIST || attempt == 8)) return ErrnoError(errno, "create " + tmp);
  }
  auto fail = [&](int e, const std::string& what) {
    close(fd);
    unlink(tmp.c_str());
    return ErrnoError(e, what);
  };
  if (fchmod(fd, mode) != 0) return fail(errno, "chmod " + tmp);
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(errno, "write " + tmp);
    }
    off += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) return fail(errno, "fsync " + tmp);
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    unlink(tmp.c_str());
    return ErrnoError(e, "rename " + tmp + " to " + path);
  }
  const std::string dir = path.substr(0, path.rfind('/'));
  int dfd = open(dir.empty() ? "/" : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);  // best effort: the rename is already visible
    close(dfd);
  }
  return Status::Ok();
}

namespace {

std::deque<std::string> Components(std::string_view p) {
  std::deque<std::string> out;
  size_t start = 0;
  while (start <= p.size()) {
    size_t slash = p.find('/', start);
    if (slash == std::string_view::npos) slash = p.size();
    if (slash > start) out.emplace_back(p.substr(start, slash - start));
    start = slash + 1;
  }
  return out;
}

// Returns the fd, or -errno (EXDEV: the path would leave the root).
int Walk(int root_fd, std::string_view rel, int flags) {
  if (!rel.empty() && rel[0] == '/') return -EXDEV;
  std::deque<std::string> todo = Components(rel);
  std::vector<int> stack;  // directories from the root down; stack[0] is root_fd (not ours)
  stack.push_back(root_fd);
  auto unwind = [&](int result) {
    for (size_t i = 1; i < stack.size(); ++i) close(stack[i]);
    return result;
  };
  int links = 0;
  while (!todo.empty()) {
    const std::string name = todo.front();
    todo.pop_front();
    if (name == ".") continue;
    if (name == "..") {
      if (stack.size() == 1) return unwind(-EXDEV);
      close(stack.back());
      stack.pop_back();
      continue;
    }
    struct stat st {};
    if (fstatat(stack.back(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return unwind(-errno);
    if (S_ISLNK(st.st_mode)) {
      if (++links > 40) return unwind(-ELOOP);
      char buf[4096];
      ssize_t n = readlinkat(stack.back(), name.c_str(), buf, sizeof buf);
      if (n < 0) return unwind(-errno);
      if (n == 0 || buf[0] == '/') return unwind(-EXDEV);  // absolute (magic links are too)
      auto target = Components(std::string_view(buf, static_cast<size_t>(n)));
      todo.insert(todo.begin(), target.begin(), target.end());
      continue;
    }
    if (todo.empty()) {
      // O_NOFOLLOW: a link swapped in since fstatat fails (ELOOP) rather than being followed.
      int fd = openat(stack.back(), name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC);
      return unwind(fd < 0 ? -errno : fd);
    }
    int dfd = openat(stack.back(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) return unwind(-errno);
    stack.push_back(dfd);
  }
  int fd = openat(stack.back(), ".", flags | O_CLOEXEC);
  return unwind(fd < 0 ? -errno : fd);
}

}  // namespace

StatusOr<int> OpenBeneath(const std::string& root, std::string_view rel, int flags,
                          BeneathMethod method) {
  const std::string what = "open " + std::string(rel) + " beneath " + root;
  int root_fd = open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) return ErrnoError(errno, what);
  int fd = -ENOSYS;
  if (method == BeneathMethod::kAuto) {
    struct open_how how {};
    how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    const std::string r(rel);
    // openat2(2): with RESOLVE_BENEATH, a ".." met while a rename or mount happens anywhere on
    // the system answers EAGAIN ("the caller should retry"). sysfs links are all "../..", and a
    // node renames files all the time (every atomic write): retry, then walk, which cannot race.
    for (int attempt = 0; attempt < 8; ++attempt) {
      long n = syscall(SYS_openat2, root_fd, r.c_str(), &how, sizeof how);
      fd = n < 0 ? -errno : static_cast<int>(n);
      if (fd != -EAGAIN) break;
    }
  }
  if (fd == -ENOSYS || fd == -EAGAIN) fd = Walk(root_fd, rel, flags);
  close(root_fd);
  if (fd == -EXDEV) {
    return FailedPreconditionError(what + ": it leaves " + root +
                                   " (an absolute or magic symlink, or .. above it)");
  }
  if (fd < 0) return ErrnoError(-fd, what);
  return fd;
}

namespace {

// mkdir(2) applies the umask to the mode it is given (0777 under umask 000), so every directory
// made here is chmod'ed to the mode meant, before anyone is told it exists.
Status MakeOneDir(const std::string& path, mode_t mode) {
  if (mkdir(path.c_str(), mode) != 0) {
    if (errno != EEXIST) return ErrnoError(errno, "mkdir " + path);
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) return ErrnoError(errno, "stat " + path);
    if (!S_ISDIR(st.st_mode)) return FailedPreconditionError(path + " exists and is not a directory");
    return Status::Ok();
  }
  if (chmod(path.c_str(), mode) != 0) return ErrnoError(errno, "chmod " + path);
  return Status::Ok();
}

}  // namespace

Status MakeDirs(const std::string& path, mode_t mode) {
  if (path.empty()) return InvalidArgumentError("mkdir: empty path");
  for (size_t pos = path.find('/', 1); pos != std::string::npos; pos = path.find('/', pos + 1)) {
    if (pos + 1 == path.size()) break;  // a trailing '/'
    RDMAK8S_RETURN_IF_ERROR(MakeOneDir(path.substr(0, pos), 0755));
  }
  return MakeOneDir(path, mode);
}

Status EnsurePrivateDir(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return ErrnoError(errno, "stat " + path);
    RDMAK8S_RETURN_IF_ERROR(MakeDirs(path, 0700));
    if (lstat(path.c_str(), &st) != 0) return ErrnoError(errno, "stat " + path);
  }
  if (S_ISLNK(st.st_mode)) {
    return FailedPreconditionError("directory " + path + " is a symlink: refused (it must be a directory itself)");
  }
  if (!S_ISDIR(st.st_mode)) return FailedPreconditionError(path + " is not a directory");
  if (st.st_uid != geteuid()) {
    return FailedPreconditionError("directory " + path + " is owned by uid " + std::to_string(st.st_uid) +
                                   ", not by uid " + std::to_string(geteuid()) + " (us): refused");
  }
  if ((st.st_mode & 077) != 0 && chmod(path.c_str(), 0700) != 0) return ErrnoError(errno, "chmod 0700 " + path);
  return Status::Ok();
}

StatusOr<std::string> ReadFd(int fd, const std::string& path, size_t max_bytes) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, path.empty() ? "read" : "read " + path);
    }
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) {
      return InvalidArgumentError((path.empty() ? "" : path + ": ") + "larger than " +
                                  std::to_string(max_bytes) + " bytes");
    }
  }
}

StatusOr<std::string> ReadRegularFile(const std::string& path, size_t max_bytes, FileLinks links,
                                      const std::function<Status(const struct stat&)>& trust) {
  const int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (links == FileLinks::kRefuse ? O_NOFOLLOW : 0);
  int fd = open(path.c_str(), flags);
  if (fd < 0) {
    // O_NOFOLLOW's answer for a symlink as the last component.
    if (errno == ELOOP && links == FileLinks::kRefuse) return FailedPreconditionError("is a symlink");
    return ErrnoError(errno, "open");
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return ErrnoError(e, "stat");
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return FailedPreconditionError("not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    close(fd);
    return InvalidArgumentError("larger than " + std::to_string(max_bytes) + " bytes");
  }
  if (trust) {
    Status ok = trust(st);
    if (!ok.ok()) {
      close(fd);
      return ok;
    }
  }
  StatusOr<std::string> text = ReadFd(fd, "", max_bytes);
  close(fd);
  return text;
}

StatusOr<std::string> ReadConfigFile(const std::string& path, size_t max_bytes) {
  return ReadRegularFile(path, max_bytes, FileLinks::kFollow);
}

std::string Basename(std::string_view path) {
  size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string Dirname(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string() : std::string(path.substr(0, slash));
}

Status CheckOwnedByUs(const std::string& path, const struct stat& st, bool want_dir) {
  if (want_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
    return FailedPreconditionError(path + " is not a " + (want_dir ? "directory" : "regular file"));
  }
  if (st.st_uid != ::geteuid()) {
    return FailedPreconditionError(path + " is owned by uid " + std::to_string(st.st_uid) +
                                   ", not " + std::to_string(::geteuid()));
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    return FailedPreconditionError(path + " is writable by group or others");
  }
  return Status::Ok();
}

Status CheckOwnedDir(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return ErrnoError(errno, "stat " + path);
  if (S_ISLNK(st.st_mode)) return FailedPreconditionError(path + " is a symlink");
  return CheckOwnedByUs(path, st, /*want_dir=*/true);
}

}  // namespace rdmak8s
