// rdmak8s: the chained CNI plugin binary. Wiring only: the real netlink, rtnetlink, DCB and sysfs
// seams into the library (cni/plugin.h); stdin in, result or error object out.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "cni/plugin.h"
#include "cni/spec.h"

int main() {
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
