#include "dra/api/kube_config.h"

#include <cctype>
#include <filesystem>

#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include "rdmak8s/base/file_util.h"

namespace rdmak8s::dra {
namespace {

namespace fs = std::filesystem;

Status RequireFile(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    return ec ? ErrnoError(ec.value(), "stat " + path) : NotFoundError(path + ": no such file");
  }
  return Status::Ok();
}

std::string Resolve(const fs::path& base_dir, const std::string& p) {
  if (p.empty() || fs::path(p).is_absolute()) return p;
  return (base_dir / p).string();
}

// The entry of `list` (clusters, users, contexts) whose name is `name`, else a null node.
YAML::Node Named(const YAML::Node& list, const std::string& name, const char* field) {
  if (list && list.IsSequence()) {
    for (const auto& item : list) {
      if (item["name"] && item["name"].as<std::string>() == name) return item[field];
    }
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

std::string Str(const YAML::Node& n, const char* key) {
  return n[key] ? n[key].as<std::string>() : std::string();
}

}  // namespace

StatusOr<std::string> Base64Decode(std::string_view text) {
  // OpenSSL's decoder (the library the client's TLS already links) takes neither the whitespace a
  // kubeconfig's wrapped data has nor missing padding: both are dropped here, and only the
  // characters outside the alphabet are named.
  std::string compact;
  compact.reserve(text.size() + 3);
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == ' ' || c == '\t' || c == '=') continue;
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '+' && c != '/') {
      return InvalidArgumentError("base64: invalid character '" + std::string(1, c) + "'");
    }
    compact.push_back(c);
  }
  if (compact.size() % 4 == 1) return InvalidArgumentError("base64: truncated");
  while (compact.size() % 4 != 0) compact.push_back('=');  // padding is optional in the input
  std::string out(compact.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(compact.data()),
                                static_cast<int>(compact.size()));
  if (n < 0) return InvalidArgumentError("base64: not decodable");
  // EVP_DecodeBlock counts the bytes the padding stands for as zeros: drop them.
  size_t pad = 0;
  for (size_t i = compact.size(); i > 0 && compact[i - 1] == '='; --i) ++pad;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

StatusOr<KubeConfig> InClusterConfig(std::string_view host, std::string_view port,
                                     const std::string& service_account_dir) {
  if (host.empty() || port.empty()) {
    return FailedPreconditionError(
        "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set "
        "(not running in a pod? use --kubeconfig)");
  }
  KubeConfig c;
  std::string h(host);
  if (h.find(':') != std::string::npos) h = "[" + h + "]";
  c.server = "https://" + h + ":" + std::string(port);
  c.token_file = service_account_dir + "/token";
  c.ca_file = service_account_dir + "/ca.crt";
  RDMAK8S_RETURN_IF_ERROR_CTX(RequireFile(c.token_file), "in-cluster config");
  RDMAK8S_RETURN_IF_ERROR_CTX(RequireFile(c.ca_file), "in-cluster config");
  return c;
}

StatusOr<KubeConfig> LoadKubeconfig(const std::string& path, std::string_view context) {
  RDMAK8S_RETURN_IF_ERROR_CTX(RequireFile(path), "kubeconfig");
  const fs::path dir = fs::path(path).parent_path();
  const std::string where = "kubeconfig " + path;
  // The one safe reader: a FIFO at the path cannot block the driver's start, nor a huge file
  // fill its memory; a kubeconfig mounted from a Secret is a link into ..data/, followed.
  StatusOr<std::string> text = ReadConfigFile(path);
  if (!text.ok()) return text.status().Prepend(where);
  try {
    YAML::Node root = YAML::Load(*text);
    if (!root.IsMap()) return InvalidArgumentError(where + ": not a mapping");
    std::string ctx_name = context.empty() ? Str(root, "current-context") : std::string(context);
    if (ctx_name.empty()) return NotFoundError(where + ": no context given and no current-context");
    YAML::Node ctx = Named(root["contexts"], ctx_name, "context");
    if (!ctx) return NotFoundError(where + ": context \"" + ctx_name + "\" not found");
    std::string cluster_name = Str(ctx, "cluster");
    std::string user_name = Str(ctx, "user");
    YAML::Node cluster = Named(root["clusters"], cluster_name, "cluster");
    if (!cluster) return NotFoundError(where + ": cluster \"" + cluster_name + "\" not found");

    KubeConfig c;
    c.server = Str(cluster, "server");
    if (c.server.empty()) return InvalidArgumentError(where + ": cluster \"" + cluster_name + "\" has no server");
    while (!c.server.empty() && c.server.back() == '/') c.server.pop_back();
    c.ca_file = Resolve(dir, Str(cluster, "certificate-authority"));
    if (std::string data = Str(cluster, "certificate-authority-data"); !data.empty()) {
      RDMAK8S_ASSIGN_OR_RETURN(c.ca_pem, Base64Decode(data));
    }
    c.insecure_skip_tls_verify = cluster["insecure-skip-tls-verify"] &&
                                 cluster["insecure-skip-tls-verify"].as<bool>();
    if (!user_name.empty()) {
      YAML::Node user = Named(root["users"], user_name, "user");
      if (!user) return NotFoundError(where + ": user \"" + user_name + "\" not found");
      if (user["exec"] || user["auth-provider"]) {
        return UnimplementedError(where + ": user \"" + user_name +
                                  "\" uses an exec or auth-provider plugin; give a token or a client certificate");
      }
      c.token = Str(user, "token");
      c.token_file = Resolve(dir, Str(user, "tokenFile"));
      c.client_cert_file = Resolve(dir, Str(user, "client-certificate"));
      c.client_key_file = Resolve(dir, Str(user, "client-key"));
      if (std::string d = Str(user, "client-certificate-data"); !d.empty()) {
        RDMAK8S_ASSIGN_OR_RETURN(c.client_cert_pem, Base64Decode(d));
      }
      if (std::string d = Str(user, "client-key-data"); !d.empty()) {
        RDMAK8S_ASSIGN_OR_RETURN(c.client_key_pem, Base64Decode(d));
      }
    }
    return c;
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(where + ": " + e.what());
  }
}

}  // namespace rdmak8s::dra
