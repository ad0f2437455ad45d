// Fuzz target: a kubeconfig (dra/api/kube_config.h LoadKubeconfig), YAML or JSON, with the
// current context and with a named one. Input: the file's bytes.
//
// Invariants beyond "no crash, no sanitizer report" (yaml-cpp throws: nothing may escape):
//   - a refusal is kNotFound (context, cluster or user missing), kInvalidArgument or
//     kUnimplemented (exec / auth-provider), as the header promises, or a file it names that
//     cannot be stat'ed (an errno);
//   - a config that loads names a server, and relative file paths come back absolute (taken
//     from the kubeconfig's directory).
#include "dra/api/kube_config.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_files.h"

namespace {

void CheckLoad(const std::string& path, std::string_view context) {
  using rdmak8s::StatusCode;
  auto cfg = rdmak8s::dra::LoadKubeconfig(path, context);
  if (!cfg.ok()) {
    const StatusCode c = cfg.status().code();
    FUZZ_CHECK(c == StatusCode::kNotFound || c == StatusCode::kInvalidArgument ||
                   c == StatusCode::kUnimplemented || cfg.status().sys_errno() != 0,
               cfg.status().ToString());
    return;
  }
  FUZZ_CHECK(!cfg->server.empty(), "a config without a server loaded");
  for (const std::string* file : {&cfg->ca_file, &cfg->token_file, &cfg->client_cert_file,
                                  &cfg->client_key_file}) {
    FUZZ_CHECK(file->empty() || file->front() == '/', "relative path left: " + *file);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = rdmak8s::fuzz::ScratchDir() + "/kubeconfig";
  rdmak8s::fuzz::WriteInput(path, rdmak8s::fuzz::AsText(data, size));
  CheckLoad(path, "");
  CheckLoad(path, "dev");
  return 0;
}
