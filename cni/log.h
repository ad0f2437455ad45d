// A tiny logger for the CNI binary: stdout belongs to the CNI result, so lines go to stderr and,
// when the node's configuration names a log file, appended to it, filtered by the level. No
// dependencies.
//
// Thread safety: Log() may be called from several threads (one write(2) per line per sink).
#pragma once

#include <string>
#include <string_view>

#include "cni/netconf.h"

namespace rdmak8s::cni {

class Logger {
 public:
  Logger() = default;
  ~Logger();
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  // stderr_fd < 0 disables stderr (tests). The plugin configures twice (the node's level, then
  // the netconf's): a log file already open under the same path stays open, not reopened.
  void Configure(LogLevel level, const std::string& log_file, int stderr_fd = 2);
  void SetContext(std::string context) { context_ = std::move(context); }
  void Log(LogLevel level, std::string_view msg);
  void Error(std::string_view m) { Log(LogLevel::kError, m); }
  void Warning(std::string_view m) { Log(LogLevel::kWarning, m); }
  void Info(std::string_view m) { Log(LogLevel::kInfo, m); }
  void Debug(std::string_view m) { Log(LogLevel::kDebug, m); }

 private:
  LogLevel level_ = LogLevel::kInfo;
  int stderr_fd_ = 2;
  int file_fd_ = -1;
  std::string file_path_;  // what file_fd_ was opened as
  std::string context_;
};

}  // namespace rdmak8s::cni
