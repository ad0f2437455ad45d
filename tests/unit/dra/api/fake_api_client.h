// ClientOf: our real kube client (dra/api/kube_client.h) talking to a started FakeApiServer over
// its unix socket, as the tests of the API-server side of the DRA driver use it.
#pragma once

#include <memory>
#include <string>

#include "dra/api/kube_client.h"
#include "fakes/fake_api_server.h"

namespace rdmak8s::dra {

// `socket`: the path `server` was started on. Asserts nothing: Create fails only on a bad config.
inline std::unique_ptr<CurlKubeClient> ClientOf(const rdmak8s::testing::FakeApiServer& server,
                                                const std::string& socket, RetryPolicy retry = {}) {
  KubeConfig c;
  c.server = server.url();
  c.unix_socket = socket;
  return std::move(*CurlKubeClient::Create(c, retry));
}

}  // namespace rdmak8s::dra
