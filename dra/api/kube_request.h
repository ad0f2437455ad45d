// What every libcurl request to the API server carries, one-shot (kube_client.cc) or streamed
// (kube_client_stream.cc): the kubeconfig's transport and TLS settings, the bearer token (its
// file re-read for each request: rotation), the common headers and options, and libcurl's
// failure named. Internal to CurlKubeClient (kube_client.h).
#pragma once

#include <memory>
#include <string>

#include <curl/curl.h>

#include "dra/api/kube_client.h"
#include "dra/api/kube_config.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::dra::internal {

// The request's URL: the server's address and the request's path.
std::string Url(const std::string& server, const HttpRequest& r);

// "Authorization: Bearer" carries this: the kubeconfig's token, or its token file read now;
// an error naming the file when it cannot be read or is empty.
StatusOr<std::string> BearerToken(const KubeConfig& config);

// Whether the request sends a body (POST, PUT, or any request given one).
bool HasBody(const HttpRequest& request);

using HeaderList = std::unique_ptr<curl_slist, void (*)(curl_slist*)>;
// Accept JSON; for a request with a body, its Content-Type and no "Expect: 100-continue" round
// trip (our bodies are small and the server takes them); the bearer token unless it is empty.
HeaderList RequestHeaders(const HttpRequest& request, const std::string& token);

// The options every request sets: its URL, method and headers, the error buffer (which must
// outlive the transfer, CURL_ERROR_SIZE bytes), no signals, our user agent; then the transport:
// the unix socket (tests), the server verified against our CA unless the kubeconfig opted out,
// the client certificate.
void SetRequestOptions(CURL* curl, const std::string& url, const HttpRequest& request,
                       curl_slist* headers, char* errbuf, const KubeConfig& config);

// Unavailable: "<what>: <libcurl's text for rc>: <the error buffer, else that text again>".
Status CurlFailure(const std::string& what, CURLcode rc, const char* errbuf);

}  // namespace rdmak8s::dra::internal
