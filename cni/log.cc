#include "cni/log.h"

#include <fcntl.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace rdmak8s::cni {

namespace {

// One log line per call whatever the message holds: a control character (a newline in a
// deviceID from a NAD, an escape sequence) is written as its C escape, so input cannot forge or
// hide a line.
void AppendEscaped(std::string* out, std::string_view s) {
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c != 0x7f) {
      out->push_back(ch);
    } else if (c == '\n') {
      *out += "\\n";
    } else if (c == '\r') {
      *out += "\\r";
    } else if (c == '\t') {
      *out += "\\t";
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      *out += buf;
    }
  }
}

}  // namespace

Logger::~Logger() {
  if (file_fd_ >= 0) close(file_fd_);
}

void Logger::Configure(LogLevel level, const std::string& log_file, int stderr_fd) {
  level_ = level;
  stderr_fd_ = stderr_fd;
  if (file_fd_ >= 0 && log_file == file_path_) return;
  if (file_fd_ >= 0) close(file_fd_);
  file_fd_ = -1;
  file_path_ = log_file;
  if (!log_file.empty()) {
    file_fd_ = open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (file_fd_ < 0 && stderr_fd_ >= 0) {
      std::string m = "rdmak8s: cannot open logFile " + log_file + ": " + std::strerror(errno) + "\n";
      (void)!write(stderr_fd_, m.data(), m.size());
    }
  }
}

void Logger::Log(LogLevel level, std::string_view msg) {
  if (level > level_) return;
  static constexpr const char* kNames[] = {"ERROR", "WARN", "INFO", "DEBUG"};
  struct timeval tv {};
  gettimeofday(&tv, nullptr);
  struct tm tm {};
  gmtime_r(&tv.tv_sec, &tm);
  char ts[64];
  std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long>(tv.tv_usec));
  std::string line = std::string(ts) + " " + kNames[static_cast<int>(level)] + " rdmak8s[" +
                     std::to_string(getpid()) + "]";
  if (!context_.empty()) {
    line += " ";
    AppendEscaped(&line, context_);
  }
  line += ": ";
  AppendEscaped(&line, msg);
  line += "\n";
  if (stderr_fd_ >= 0) (void)!write(stderr_fd_, line.data(), line.size());
  if (file_fd_ >= 0) (void)!write(file_fd_, line.data(), line.size());
}

}  // namespace rdmak8s::cni
