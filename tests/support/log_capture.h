// LogCapture: while it lives, spdlog's default logger writes "<level letter> <message>" lines
// (debug and up) to a string instead of the console; the console gets them again after.
//
// Thread safety: Text() from any thread; one LogCapture at a time. Other threads (a daemon's
// loop) may log while a LogCapture is made or destroyed. The default logger is never swapped
// while a test runs: before main() this header installs, once per process, a default logger
// whose one sink routes each line to the console or to the live capture, under that sink's
// mutex. (Swapping loggers per capture, as this did before, raced: SPDLOG_* reads spdlog's raw
// default-logger pointer without a lock, and TSan caught a daemon thread reading the capture
// logger the test thread had just made.)
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/sink.h>
#include <spdlog/spdlog.h>

namespace rdmak8s::testing {

namespace log_capture_internal {

// The default logger's one sink: the console sinks the process started with, or the capture.
class RouterSink final : public spdlog::sinks::sink {
 public:
  explicit RouterSink(std::vector<spdlog::sink_ptr> console) : console_(std::move(console)) {}

  void log(const spdlog::details::log_msg& msg) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!capturing_) {
      for (auto& s : console_) {
        if (s->should_log(msg.level)) s->log(msg);
      }
      return;
    }
    spdlog::memory_buf_t buf;
    capture_format_.format(msg, buf);
    text_.append(buf.data(), buf.size());
  }
  void flush() override {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& s : console_) s->flush();
  }
  // The console sinks keep their own pattern; a capture's lines are always "%L %v".
  void set_pattern(const std::string& pattern) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& s : console_) s->set_pattern(pattern);
  }
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& s : console_) s->set_formatter(formatter->clone());
  }

  void Begin() {
    std::lock_guard<std::mutex> lock(mu_);
    capturing_ = true;
    text_.clear();
  }
  void End() {
    std::lock_guard<std::mutex> lock(mu_);
    capturing_ = false;
  }
  std::string Text() {
    std::lock_guard<std::mutex> lock(mu_);
    return text_;
  }

 private:
  std::mutex mu_;
  std::vector<spdlog::sink_ptr> console_;
  spdlog::pattern_formatter capture_format_{"%L %v"};
  bool capturing_ = false;
  std::string text_;
};

struct Router {
  std::shared_ptr<spdlog::logger> logger;
  std::shared_ptr<RouterSink> sink;
};

inline Router& TheRouter() {
  static Router* router = [] {
    auto previous = spdlog::default_logger();
    auto sink = std::make_shared<RouterSink>(previous->sinks());
    auto logger = std::make_shared<spdlog::logger>(previous->name(), sink);
    logger->set_level(previous->level());
    spdlog::set_default_logger(logger);
    return new Router{logger, sink};  // never freed: threads may log until the process exits
  }();
  return *router;
}

// Installed during static initialisation, before main() and so before any test's thread.
inline const bool kRouterInstalled = (TheRouter(), true);

}  // namespace log_capture_internal

class LogCapture {
 public:
  LogCapture() : level_(Router().logger->level()) {
    Router().sink->Begin();
    Router().logger->set_level(spdlog::level::debug);
  }
  ~LogCapture() {
    Router().logger->set_level(level_);
    Router().sink->End();
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::string Text() const { return Router().sink->Text(); }

 private:
  static log_capture_internal::Router& Router() { return log_capture_internal::TheRouter(); }
  spdlog::level::level_enum level_;
};

}  // namespace rdmak8s::testing
