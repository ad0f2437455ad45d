// LogCapture: while it lives, spdlog's default logger writes "<level letter> <message>" lines
// (debug and up) to a string instead of the console; the previous logger comes back after.
//
// Thread safety: Text() from any thread; one LogCapture at a time. Other threads (a daemon's
// loop) may log while a LogCapture is made or destroyed: SPDLOG_* takes spdlog's raw default
// logger pointer and uses it after, so a capture logger is never freed (each one is kept until
// the process exits; a line logged late lands in its finished capture, harmlessly).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

namespace rdmak8s::testing {

class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()), sink_(std::make_shared<Sink>()) {
    sink_->set_pattern("%L %v");
    auto logger = std::make_shared<spdlog::logger>("capture", sink_);
    logger->set_level(spdlog::level::debug);
    KeepForever(logger);
    spdlog::set_default_logger(logger);
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::string Text() const { return sink_->Text(); }

 private:
  // Found by ASan: a daemon thread logged through the capture logger's raw pointer just as the
  // test's LogCapture went out of scope and freed it (SEGV in sink::should_log).
  static void KeepForever(std::shared_ptr<spdlog::logger> logger) {
    static std::mutex mu;
    static auto* kept = new std::vector<std::shared_ptr<spdlog::logger>>();
    std::lock_guard<std::mutex> lock(mu);
    kept->push_back(std::move(logger));
  }

  class Sink final : public spdlog::sinks::base_sink<std::mutex> {
   public:
    std::string Text() {
      std::lock_guard<std::mutex> lock(text_mu_);
      return text_;
    }

   protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
      spdlog::memory_buf_t buf;
      formatter_->format(msg, buf);
      std::lock_guard<std::mutex> lock(text_mu_);
      text_.append(buf.data(), buf.size());
    }
    void flush_() override {}

   private:
    std::mutex text_mu_;
    std::string text_;
  };

  std::shared_ptr<spdlog::logger> previous_;
  std::shared_ptr<Sink> sink_;
};

}  // namespace rdmak8s::testing
