// What each long-running binary (rdmak8s-device-plugin, rdmak8s-dra-driver) does first and
// last: klog-format lines on stderr at the -v level asked, and a last-resort catch that names
// the program instead of terminating with an uncaught exception.
#pragma once

namespace rdmak8s::node {

// spdlog pattern of klog's header: "I1130 19:55:01.123456 12345 daemon.cc:310] message"
// (severity, mmdd, time with microseconds, thread id, source file:line; the SPDLOG_* macros
// give the source).
inline constexpr char kKlogPattern[] = "%L%m%d %H:%M:%S.%f %t %s:%#] %v";

// Makes a stderr logger with kKlogPattern the default one: info, debug at verbosity 1, trace
// at 2 and above.
void UseKlogStderrLogger(int verbosity);

// real_main(argc, argv); an exception escaping it is printed as "<program>: fatal: <what>" on
// stderr and the exit code is 1.
int RunGuarded(const char* program, int (*real_main)(int, char**), int argc, char** argv);

}  // namespace rdmak8s::node
