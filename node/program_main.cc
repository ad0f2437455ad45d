#include "node/program_main.h"

#include <sys/stat.h>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <exception>

namespace rdmak8s::node {

void UseKlogStderrLogger(int verbosity) {
  auto logger = spdlog::stderr_color_mt("rdmak8s");
  logger->set_pattern(kKlogPattern);
  spdlog::set_default_logger(logger);
  spdlog::set_level(verbosity >= 2 ? spdlog::level::trace
                                   : (verbosity == 1 ? spdlog::level::debug : spdlog::level::info));
}

int RunGuarded(const char* program, int (*real_main)(int, char**), int argc, char** argv) {
  umask(kAgentUmask);
  try {
    return real_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: fatal: %s\n", program, e.what());
    return 1;
  }
}

}  // namespace rdmak8s::node
