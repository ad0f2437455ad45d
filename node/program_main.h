// What each long-running binary (rdmak8s-device-plugin, rdmak8s-dra-driver) does first and
// last: klog-format lines on stderr at the -v level asked, an umask that its own files never
// inherit from the container, and a last-resort catch that names the program instead of
// terminating with an uncaught exception.
#pragma once

#include <sys/types.h>

namespace rdmak8s::node {

// spdlog pattern of klog's header: "I1130 19:55:01.123456 12345 daemon.cc:310] message"
// (severity, mmdd, time with microseconds, thread id, source file:line; the SPDLOG_* macros
// give the source).
inline constexpr char kKlogPattern[] = "%L%m%d %H:%M:%S.%f %t %s:%#] %v";

// Makes a stderr logger with kKlogPattern the default one: info, debug at verbosity 1, trace
// at 2 and above.
void UseKlogStderrLogger(int verbosity);

// The mode of every unix socket an agent serves (kubelet, root, is its only caller), set on the
// socket before it gets its public name: bind(2) alone gives 0777 less the umask, and a
// container started with umask 000 would let any local user call the agent.
inline constexpr mode_t kSocketMode = 0600;

// The umask RunGuarded sets before real_main: whatever the agent creates without an explicit
// mode (a socket between bind and chmod, a library's file) is its owner's alone. Everything
// meant for others gets its mode explicitly (MakeDirs, WriteFileAtomic, kSocketMode).
inline constexpr mode_t kAgentUmask = 077;

// umask(kAgentUmask), then real_main(argc, argv); an exception escaping it is printed as "<program>: fatal: <what>" on
// stderr and the exit code is 1.
int RunGuarded(const char* program, int (*real_main)(int, char**), int argc, char** argv);

}  // namespace rdmak8s::node
