// node::AgentHttp: the same paths, bounds and answers for both agents (/metrics, /livez,
// /readyz and /healthz), a taken address named with its errno kept, one server at a time.
#include "node/agent_http.h"

#include <cerrno>
#include <string>

#include <gtest/gtest.h>

#include "support/loopback_http.h"

namespace rdmak8s::node {
namespace {

TEST(AgentHttpTest, EveryPathIsAnsweredByTheAgentsOwnAnswer) {
  std::string unready = "not registered with kubelet";
  AgentHttp http({[] { return std::string(); }, [&] { return unready; },
                  [] { return std::string("rdmak8s_ready 0\n"); }});
  ASSERT_TRUE(http.Serve("127.0.0.1:0").ok());
  const int port = http.port();
  ASSERT_GT(port, 0);
  EXPECT_EQ(testing::StatusLine(testing::HttpRequest(port, "/livez")), "HTTP/1.1 200 OK");
  for (const char* path : {"/readyz", "/healthz"}) {
    const std::string r = testing::HttpRequest(port, path);
    EXPECT_EQ(testing::StatusLine(r), "HTTP/1.1 503 Service Unavailable") << path;
    EXPECT_EQ(testing::Body(r), "not registered with kubelet\n") << path;
  }
  EXPECT_EQ(testing::Body(testing::HttpRequest(port, "/metrics")), "rdmak8s_ready 0\n");
  EXPECT_EQ(testing::StatusLine(testing::HttpRequest(port, "/other")), "HTTP/1.1 404 Not Found");
  EXPECT_EQ(http.Serve("127.0.0.1:0").code(), StatusCode::kFailedPrecondition);
}

TEST(AgentHttpTest, ATakenAddressKeepsTheBindsErrnoAndNamesTheAddress) {
  AgentHttp first({[] { return std::string(); }, [] { return std::string(); }, [] { return std::string(); }});
  ASSERT_TRUE(first.Serve("127.0.0.1:0").ok());
  AgentHttp second({[] { return std::string(); }, [] { return std::string(); }, [] { return std::string(); }});
  const std::string address = "127.0.0.1:" + std::to_string(first.port());
  Status s = second.Serve(address);
  EXPECT_EQ(s.sys_errno(), EADDRINUSE);
  EXPECT_EQ(s.message(), "metrics listen on " + address + ": bind: Address already in use");
  EXPECT_EQ(second.port(), 0);
}

}  // namespace
}  // namespace rdmak8s::node
