// Where the API server is and how we prove who we are: in-cluster (the pod's service account)
// or a kubeconfig file for development.
//
// In-cluster (what client-go's rest.InClusterConfig reads): the server from
// KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT (passed in by the caller, which reads the
// environment), the CA bundle ca.crt and the token file `token` of the service-account directory.
// The token is a file path, not a value: kubelet rotates projected tokens, and the client re-reads
// it for every request.
//
// Kubeconfig: YAML (JSON is YAML too) with clusters / users / contexts; the current context or
// the one named. Supported: server, certificate-authority(-data), insecure-skip-tls-verify,
// token, tokenFile, client-certificate(-data), client-key(-data). Relative file paths are taken
// from the kubeconfig's directory, as kubectl does. Exec and auth-provider plugins are not
// supported (an error naming them).
//
// Thread safety: values and free functions.
#pragma once

#include <string>
#include <string_view>

#include "rdmak8s/base/status.h"

namespace rdmak8s::dra {

struct KubeConfig {
  std::string server;  // "https://10.96.0.1:443"; scheme and authority, no path
  std::string ca_file;  // PEM bundle that signs the server's certificate
  std::string ca_pem;   // the same, inline (certificate-authority-data)
  bool insecure_skip_tls_verify = false;
  std::string token;       // a static bearer token
  std::string token_file;  // re-read for each request (wins over `token`)
  std::string client_cert_file, client_key_file;
  std::string client_cert_pem, client_key_pem;
  // Tests and local proxies: connect to this unix socket whatever the server's host is.
  std::string unix_socket;
};

inline constexpr char kServiceAccountDir[] = "/var/run/secrets/kubernetes.io/serviceaccount";

// FailedPrecondition when host or port is empty (not running in a pod); NotFound naming the
// file when the service account's token or ca.crt is missing. An IPv6 host is bracketed.
StatusOr<KubeConfig> InClusterConfig(std::string_view host, std::string_view port,
                                     const std::string& service_account_dir = kServiceAccountDir);

// Reads `path` and takes `context` (the current-context when empty). NotFound when the file,
// the context, its cluster or its user is missing; InvalidArgument naming the field when the
// file is not a kubeconfig; Unimplemented for exec / auth-provider users.
StatusOr<KubeConfig> LoadKubeconfig(const std::string& path, std::string_view context = "");

// RFC 4648 base64 (padding optional, whitespace ignored); InvalidArgument on other characters.
StatusOr<std::string> Base64Decode(std::string_view text);

}  // namespace rdmak8s::dra
