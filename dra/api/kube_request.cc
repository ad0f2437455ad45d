#include "dra/api/kube_request.h"

#include <cctype>

#include "rdmak8s/base/file_util.h"

namespace rdmak8s::dra::internal {
namespace {

// A service-account token is a few KiB; the projected volume's file is a link into ..data/.
constexpr size_t kMaxTokenBytes = 64 * 1024;

StatusOr<std::string> ReadToken(const std::string& path) {
  StatusOr<std::string> text = ReadRegularFile(path, kMaxTokenBytes, FileLinks::kFollow);
  if (!text.ok()) return text.status().Prepend("read token " + path);
  std::string token = std::move(*text);
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  if (token.empty()) return InvalidArgumentError("read token " + path + ": empty");
  return token;
}

// The transport and TLS settings. The blobs are CURL_BLOB_COPY: libcurl keeps its own copy, so
// they may go out of scope here.
void SetTransport(CURL* curl, const KubeConfig& config) {
  if (!config.unix_socket.empty()) curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, config.unix_socket.c_str());
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, config.insecure_skip_tls_verify ? 0L : 1L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, config.insecure_skip_tls_verify ? 0L : 2L);
  if (!config.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, config.ca_file.c_str());
  curl_blob ca_blob{const_cast<char*>(config.ca_pem.data()), config.ca_pem.size(), CURL_BLOB_COPY};
  if (!config.ca_pem.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &ca_blob);
  if (!config.client_cert_file.empty()) curl_easy_setopt(curl, CURLOPT_SSLCERT, config.client_cert_file.c_str());
  if (!config.client_key_file.empty()) curl_easy_setopt(curl, CURLOPT_SSLKEY, config.client_key_file.c_str());
  curl_blob cert_blob{const_cast<char*>(config.client_cert_pem.data()), config.client_cert_pem.size(), CURL_BLOB_COPY};
  curl_blob key_blob{const_cast<char*>(config.client_key_pem.data()), config.client_key_pem.size(), CURL_BLOB_COPY};
  if (!config.client_cert_pem.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERT_BLOB, &cert_blob);
    curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
  }
  if (!config.client_key_pem.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLKEY_BLOB, &key_blob);
    curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
  }
}

}  // namespace

std::string Url(const std::string& server, const HttpRequest& r) { return server + r.path; }

StatusOr<std::string> BearerToken(const KubeConfig& config) {
  if (config.token_file.empty()) return config.token;
  return ReadToken(config.token_file);
}

bool HasBody(const HttpRequest& request) {
  return !request.body.empty() || request.method == "POST" || request.method == "PUT";
}

HeaderList RequestHeaders(const HttpRequest& request, const std::string& token) {
  curl_slist* headers = curl_slist_append(nullptr, "Accept: application/json");
  if (HasBody(request)) {
    headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Expect:");
  }
  if (!token.empty()) {
    headers = curl_slist_append(headers, ("Authorization: Bearer " + token).c_str());
  }
  return HeaderList(headers, curl_slist_free_all);
}

void SetRequestOptions(CURL* curl, const std::string& url, const HttpRequest& request,
                       curl_slist* headers, char* errbuf, const KubeConfig& config) {
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "rdmak8s-dra-driver/" RDMAK8S_VERSION);
  SetTransport(curl, config);
}

Status CurlFailure(const std::string& what, CURLcode rc, const char* errbuf) {
  std::string detail = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc);
  while (!detail.empty() && detail.back() == '\n') detail.pop_back();
  return UnavailableError(what + ": " + curl_easy_strerror(rc) + ": " + detail);
}

}  // namespace rdmak8s::dra::internal
