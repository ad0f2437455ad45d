#include "dra/api/kube_config.h"

#include <sys/stat.h>

#include <fstream>

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace rdmak8s::dra {
namespace {

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(KubeConfigTest, InClusterNeedsTheServiceEnvironment) {
  auto c = InClusterConfig("", "443", "/nonexistent");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(c.status().message().find("KUBERNETES_SERVICE_HOST"), std::string::npos);
}

TEST(KubeConfigTest, InClusterNamesTheMissingServiceAccountFile) {
  testing::TempDir dir;
  auto c = InClusterConfig("10.96.0.1", "443", dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find(dir.path() + "/token"), std::string::npos) << c.status().message();
}

TEST(KubeConfigTest, InClusterReadsTheTokenFromItsFileAndBracketsIpv6) {
  testing::TempDir dir;
  Write(dir.path() + "/token", "t");
  Write(dir.path() + "/ca.crt", "pem");
  auto c = InClusterConfig("fd00::1", "6443", dir.path());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://[fd00::1]:6443");
  EXPECT_EQ(c->token_file, dir.path() + "/token");
  EXPECT_TRUE(c->token.empty());
  EXPECT_EQ(c->ca_file, dir.path() + "/ca.crt");
}

constexpr char kYaml[] = R"(apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: c1
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority-data: aGVsbG8=
- name: c2
  cluster:
    server: https://other:6443
    certificate-authority: ca.pem
contexts:
- name: dev
  context: {cluster: c1, user: u1}
- name: other
  context: {cluster: c2, user: u2}
users:
- name: u1
  user:
    token: abc
    client-certificate-data: Y2VydA==
    client-key-data: a2V5
- name: u2
  user:
    client-certificate: certs/client.pem
    client-key: /abs/key.pem
- name: u3
  user:
    exec: {command: aws}
)";

// --kubeconfig is read by the one safe reader: a FIFO at the path is refused, never waited on.
TEST(KubeConfigTest, AKubeconfigThatIsAFifoIsRefusedNamingIt) {
  testing::TempDir dir;
  const std::string fifo = dir.path() + "/config";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto c = LoadKubeconfig(fifo);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(c.status().message(), "kubeconfig " + fifo + ": not a regular file");
}

TEST(KubeConfigTest, KubeconfigTakesTheCurrentContextAndDecodesData) {
  testing::TempDir dir;
  Write(dir.path() + "/config", kYaml);
  auto c = LoadKubeconfig(dir.path() + "/config");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://127.0.0.1:6443");
  EXPECT_EQ(c->ca_pem, "hello");
  EXPECT_EQ(c->token, "abc");
  EXPECT_EQ(c->client_cert_pem, "cert");
  EXPECT_EQ(c->client_key_pem, "key");
}

TEST(KubeConfigTest, KubeconfigResolvesRelativePathsFromItsDirectory) {
  testing::TempDir dir;
  Write(dir.path() + "/config", kYaml);
  auto c = LoadKubeconfig(dir.path() + "/config", "other");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->ca_file, dir.path() + "/ca.pem");
  EXPECT_EQ(c->client_cert_file, dir.path() + "/certs/client.pem");
  EXPECT_EQ(c->client_key_file, "/abs/key.pem");
}

TEST(KubeConfigTest, KubeconfigInJsonIsReadToo) {
  testing::TempDir dir;
  Write(dir.path() + "/config.json", R"({"current-context":"x","contexts":[{"name":"x","context":{"cluster":"k"}}],
    "clusters":[{"name":"k","cluster":{"server":"https://k:443","insecure-skip-tls-verify":true}}]})");
  auto c = LoadKubeconfig(dir.path() + "/config.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://k:443");
  EXPECT_TRUE(c->insecure_skip_tls_verify);
}

TEST(KubeConfigTest, KubeconfigErrorsNameWhatIsMissingOrUnsupported) {
  testing::TempDir dir;
  std::string yaml = kYaml;
  yaml += "- name: third\n  context: {cluster: c1, user: u3}\n";
  // Append the context to the contexts list by rewriting it in place.
  std::string with_exec = std::string(kYaml);
  with_exec.replace(with_exec.find("users:"), 6, "- name: third\n  context: {cluster: c1, user: u3}\nusers:");
  Write(dir.path() + "/config", with_exec);
  auto missing = LoadKubeconfig(dir.path() + "/config", "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("\"nope\""), std::string::npos);
  auto exec = LoadKubeconfig(dir.path() + "/config", "third");
  ASSERT_FALSE(exec.ok());
  EXPECT_EQ(exec.status().code(), StatusCode::kUnimplemented);
  auto nofile = LoadKubeconfig(dir.path() + "/absent");
  EXPECT_EQ(nofile.status().code(), StatusCode::kNotFound);
  Write(dir.path() + "/bad", "[1, 2");
  auto bad = LoadKubeconfig(dir.path() + "/bad");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST(KubeConfigTest, Base64RejectsForeignCharacters) {
  EXPECT_EQ(*Base64Decode("aGVs\nbG8="), "hello");
  EXPECT_FALSE(Base64Decode("a*b").ok());
}

}  // namespace
}  // namespace rdmak8s::dra
