// rdmak8s: the chained CNI plugin binary. Wiring only: the real netlink, rtnetlink, DCB and sysfs
// seams into the library (cni/plugin.h); stdin in, result or error object out.
// `rdmak8s --version` is for people and installers, not runtimes (they pass no arguments): it
// answers before stdin is read, so it does not wait for an EOF a terminal never sends.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "cni/plugin.h"
#include "cni/spec.h"

namespace {

// "rdmak8s CNI plugin <version>" and the spec versions VERSION lists, one line each.
void PrintVersion() {
  std::string text = "rdmak8s CNI plugin " RDMAK8S_VERSION "\nCNI protocol versions supported:";
  const char* sep = " ";
  for (std::string_view v : rdmak8s::cni::kSupportedVersions) {
    text += sep;
    text += v;
    sep = ", ";
  }
  text += "\n";
  fwrite(text.data(), 1, text.size(), stdout);
  fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  // Only the first argument is looked at, and only for --version: anything else is ignored, as
  // before (the CNI protocol is the environment and stdin, never arguments).
  if (argc > 1 && std::strcmp(argv[1], "--version") == 0) {
    PrintVersion();
    return 0;
  }
  try {
    std::string input;
    char buf[65536];
    for (;;) {
      ssize_t n = read(0, buf, sizeof buf);
      if (n < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (n == 0) break;
      input.append(buf, static_cast<size_t>(n));
    }
    rdmak8s::cni::MountingSysfsView pod_sysfs;
    rdmak8s::cni::PluginOptions options;
    // The runtime's own environment: no NAD, annotation, CNI_ARGS or runtimeConfig reaches it.
    if (const char* path = std::getenv(rdmak8s::cni::kNodeConfigEnv); path != nullptr && *path != '\0') {
      options.node_config_path = path;
    }
    options.new_rdma_netlink = [] { return rdmak8s::NewRdmaNetlink(); };
    options.new_dcb_netlink = [] { return rdmak8s::NewDcbNetlink(); };
    options.new_route_netlink = [] { return rdmak8s::NewRouteNetlink(); };
    options.pod_sysfs = &pod_sysfs;
    auto out = rdmak8s::cni::RunPlugin(options, [](const char* k) { return std::getenv(k); }, input);
    if (!out.stdout_data.empty()) {
      out.stdout_data += "\n";
      fwrite(out.stdout_data.data(), 1, out.stdout_data.size(), stdout);
    }
    fflush(stdout);
    return out.exit_code;
  } catch (const std::exception& e) {  // last resort: still answer with a spec error object
    std::printf("{\"cniVersion\":\"1.1.0\",\"code\":5,\"msg\":\"internal error: %s\"}\n", "exception");
    std::fprintf(stderr, "rdmak8s: internal error: %s\n", e.what());
    return 1;
  }
}
