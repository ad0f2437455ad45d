// rdmak8s-fake-api-server: the tests' FakeApiServer (tests/fakes/fake_api_server.h) as a process,
// for the e2e VM: resource.k8s.io ResourceSlices and ResourceClaims and the nodes endpoint, until
// SIGINT/SIGTERM. Either HTTP on a unix socket (--socket), or, as a driver meets a real API
// server, HTTPS on 127.0.0.1 with a self-signed certificate and a bearer token (--tls-dir: the
// kubeconfig naming them is written there, with ca.crt and token, once it serves).
//
// Claims come from a directory: each *.json file written into --claims-dir (closed after
// writing, or renamed into it) is a ResourceClaim object the server then holds; a file written
// again replaces the claim, a file removed (or renamed away) deletes it (its devices are free
// again). A claim written with status.allocation is held as if a scheduler had allocated it; one
// without is allocated by the server's allocator (tests/fakes/fake_allocator.h: taints,
// tolerations, firstAvailable, binding conditions; the state in the claim's annotation
// fake.rdmak8s.io/binding). Slices are read back with
// any HTTP client (curl --unix-socket S http://localhost/apis/resource.k8s.io/v1/resourceslices), and
// so are the claims, with the status.devices drivers wrote (--grant-claim-status lets them).
// Exit status: 0 after a signal, 1 when it cannot serve, 2 on bad usage.
#include <pthread.h>
#include <signal.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "fakes/fake_api_server.h"

namespace {

using nlohmann::json;

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Which claim (namespace, name) each loaded file holds, for its removal: main's until the
// watcher starts, the watcher's after.
using ClaimFiles = std::map<std::string, std::pair<std::string, std::string>>;

// Reads one claim file into the server (and into `files`); a file that is not a ResourceClaim is reported, not
// fatal (the scenario sees the line in the server's log).
void LoadClaim(rdmak8s::testing::FakeApiServer& server, const std::string& path, ClaimFiles& files) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  json claim = json::parse(text.str(), nullptr, false);
  if (claim.is_discarded() || !claim.is_object() || !claim.contains("metadata")) {
    std::cerr << "rdmak8s-fake-api-server: " << path << ": not a ResourceClaim object\n";
    return;
  }
  server.AddClaim(claim);
  files[path] = {claim["metadata"].value("namespace", ""), claim["metadata"].value("name", "")};
  std::cerr << "rdmak8s-fake-api-server: claim "
            << claim["metadata"].value("namespace", "") << "/" << claim["metadata"].value("name", "")
            << " from " << path << "\n";
}

// For as long as the process lives: every claim file closed after writing or moved into `dir`.
void WatchClaims(rdmak8s::testing::FakeApiServer& server, const std::string& dir, int inotify_fd,
                 ClaimFiles& files) {
  alignas(inotify_event) char buf[4096];
  for (;;) {
    ssize_t n = read(inotify_fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<inotify_event*>(p);
      p += sizeof(inotify_event) + ev->len;
      if (ev->len == 0) continue;
      std::string name = ev->name;
      if (!EndsWith(name, ".json")) continue;
      const std::string path = dir + "/" + name;
      if ((ev->mask & (IN_DELETE | IN_MOVED_FROM)) == 0) {
        LoadClaim(server, path, files);
        continue;
      }
      auto it = files.find(path);
      if (it == files.end()) continue;
      const auto [ns, claim] = it->second;
      files.erase(it);
      if (server.DeleteClaim(ns, claim)) {
        std::cerr << "rdmak8s-fake-api-server: claim " << ns << "/" << claim << " deleted (" << path << " removed)\n";
      }
    }
  }
}

// <dir>/ca.crt, <dir>/token and <dir>/kubeconfig (JSON, which YAML readers take) naming them,
// each written to a temporary name and renamed: a reader that sees the kubeconfig sees it whole.
bool WriteKubeconfig(const std::string& dir, const std::string& url,
                     const rdmak8s::testing::FakeApiServerOptions& options) {
  auto write = [&](const std::string& name, const std::string& text) {
    const std::string tmp = dir + "/." + name + ".tmp";
    std::ofstream(tmp) << text;
    if (rename(tmp.c_str(), (dir + "/" + name).c_str()) != 0) {
      std::cerr << "rdmak8s-fake-api-server: write " << dir << "/" << name << ": "
                << std::strerror(errno) << "\n";
      return false;
    }
    return true;
  };
  json kubeconfig = {
      {"apiVersion", "v1"}, {"kind", "Config"}, {"current-context", "e2e"},
      {"clusters", {{{"name", "fake"}, {"cluster", {{"server", url}, {"certificate-authority", "ca.crt"}}}}}},
      {"users", {{{"name", "driver"}, {"user", {{"tokenFile", "token"}}}}}},
      {"contexts", {{{"name", "e2e"}, {"context", {{"cluster", "fake"}, {"user", "driver"}}}}}}};
  return write("ca.crt", options.tls_cert_pem) && write("token", options.token) &&
         write("kubeconfig", kubeconfig.dump(2) + "\n");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rdmak8s-fake-api-server: a stand-in kube-apiserver for resource.k8s.io "
               "(ResourceSlices, ResourceClaims) and nodes, over HTTP on a unix socket."};
  std::string socket, tls_dir, claims_dir;
  std::vector<std::string> nodes, status_grants;
  bool no_v1 = false;
  auto* socket_opt = app.add_option("--socket", socket, "unix socket to serve HTTP on");
  app.add_option("--tls-dir", tls_dir,
                 "serve HTTPS on 127.0.0.1 instead, and write kubeconfig, ca.crt and token here")
      ->excludes(socket_opt);
  app.add_option("--claims-dir", claims_dir,
                 "directory whose *.json files are ResourceClaims (loaded at start and on write, deleted on "
                 "removal; one without status.allocation is allocated by the fake allocator)");
  app.add_option("--node", nodes, "NAME:UID of a Node object (repeatable)");
  app.add_flag("--no-v1", no_v1, "serve resource.k8s.io v1beta1 only, as a 1.32/1.33 server");
  app.add_option("--grant-claim-status", status_grants,
                 "DRIVER whose status.devices entries of a claim the caller may change (repeatable; "
                 "resourceclaims/driver, as the shipped RBAC grants the DRA driver); none by default");
  CLI11_PARSE(app, argc, argv);

  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  if (socket.empty() && tls_dir.empty()) {
    std::cerr << "rdmak8s-fake-api-server: give --socket or --tls-dir\n";
    return 2;
  }
  rdmak8s::testing::FakeApiServerOptions options;
  options.serve_v1 = !no_v1;
  if (!tls_dir.empty()) {
    rdmak8s::testing::TestCertificate cert = rdmak8s::testing::MakeSelfSignedCertificate();
    options.tls_cert_pem = cert.cert_pem;
    options.tls_key_pem = cert.key_pem;
    options.token = "e2e-" + std::to_string(getpid());
  }
  rdmak8s::testing::FakeApiServer server(options);
  for (const auto& n : nodes) {
    const auto colon = n.find(':');
    if (colon == std::string::npos) {
      std::cerr << "rdmak8s-fake-api-server: --node " << n << ": want NAME:UID\n";
      return 2;
    }
    server.AddNode(n.substr(0, colon), n.substr(colon + 1));
  }
  int inotify_fd = -1;
  if (!claims_dir.empty()) {
    inotify_fd = inotify_init1(IN_CLOEXEC);
    if (inotify_fd < 0 ||
        inotify_add_watch(inotify_fd, claims_dir.c_str(),
                          IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM) < 0) {
      std::cerr << "rdmak8s-fake-api-server: watch " << claims_dir << ": " << std::strerror(errno)
                << "\n";
      return 1;
    }
  }
  server.GrantClaimStatus({status_grants.begin(), status_grants.end()});
  if (!socket.empty()) unlink(socket.c_str());
  if (!server.Start(socket)) {
    std::cerr << "rdmak8s-fake-api-server: cannot serve on " << (socket.empty() ? "127.0.0.1" : socket)
              << "\n";
    return 1;
  }
  if (!tls_dir.empty() && !WriteKubeconfig(tls_dir, server.url(), options)) return 1;
  // Files already there, after the watch is set: one written in between is loaded twice, which
  // is harmless (the same claim again).
  std::thread watcher;
  ClaimFiles claim_files;  // lives until the process ends, as the detached watcher
  if (inotify_fd >= 0) {
    if (auto* d = opendir(claims_dir.c_str())) {
      while (auto* e = readdir(d)) {
        std::string name = e->d_name;
        if (EndsWith(name, ".json")) LoadClaim(server, claims_dir + "/" + name, claim_files);
      }
      closedir(d);
    }
    watcher = std::thread([&] { WatchClaims(server, claims_dir, inotify_fd, claim_files); });
    watcher.detach();  // ends with the process
  }
  std::cerr << "rdmak8s-fake-api-server: serving on " << (socket.empty() ? server.url() : socket)
            << "\n";
  int sig = 0;
  sigwait(&stop_signals, &sig);
  server.Stop();
  if (!socket.empty()) unlink(socket.c_str());
  return 0;
}
