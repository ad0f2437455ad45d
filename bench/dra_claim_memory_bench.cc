// Peak memory of concurrent claim reads of large ResourceClaims (issue 32 item 3): N reads at
// once (what N NodePrepareResources calls do first: ApiClaimReader::GetClaim over HTTP), each
// claim about 1.4 MB (45,000 labels and the managedFields the API server adds). The API server
// (the tests' fake) runs in a child process so that the figure is the reader's alone: peak
// RSS (VmHWM of a fresh process per round) above the RSS before it, with the driver's malloc
// setting (dra/main.cc; RDMAK8S_BENCH_GLIBC_DEFAULT_MMAP=1 shows glibc's default instead).
// Figures, not asserted.
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "dra/api/claim_reader.h"
#include "dra/api/kube_client.h"
#include "fakes/fake_api_server.h"
#include "support/large_claim.h"
#include "support/temp_dir.h"

namespace {

using namespace rdmak8s;
using nlohmann::json;

// "VmHWM:   1234 kB" / "VmRSS: ..." of /proc/self/status, in KiB.
long StatusKib(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  return -1;
}

// The claim: 45,000 labels, a managedFields entry naming each, one device allocated.
json LargeClaim(const std::string& name) {
  json c = {{"apiVersion", "resource.k8s.io/v1"},
            {"kind", "ResourceClaim"},
            {"metadata", {{"namespace", "ml"}, {"name", name}, {"uid", name + "-uid"}}}};
  testing::Swell(c, 45000);
  c["status"]["allocation"]["devices"]["results"] =
      json::array({{{"request", "nic"}, {"driver", "rdma.rdmak8s.io"}, {"pool", "node1"}, {"device", "mlx5-0"}}});
  c["status"]["reservedFor"] = json::array({{{"resource", "pods"}, {"name", "p"}, {"uid", "pod-uid"}}});
  return c;
}

constexpr int kClaims = 16;

// One round in a process of its own (a fresh heap: what one round's allocator keeps does not
// count in the next): `n` reads at once, then its peak RSS above the RSS it started with.
void Round(const std::string& socket, int n) {
  // As dra/main.cc sets it: large buffers mapped on their own, returned to the kernel when freed.
  if (getenv("RDMAK8S_BENCH_GLIBC_DEFAULT_MMAP") == nullptr) mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  const long before = StatusKib("VmRSS");
  dra::KubeConfig config;
  config.server = "http://localhost";
  config.unix_socket = socket;
  auto client = dra::CurlKubeClient::Create(config);
  if (!client.ok()) _exit(1);
  dra::ApiClaimReader reader(client->get(), dra::ResourceApiVersion::kV1);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  std::mutex mu;
  int failed = 0;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      auto c = reader.GetClaim("ml", "big-" + std::to_string(i),
                               std::chrono::steady_clock::now() + std::chrono::seconds(120));
      std::lock_guard<std::mutex> lock(mu);
      failed += c.ok() ? 0 : 1;
    });
  }
  for (auto& t : threads) t.join();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const long peak = StatusKib("VmHWM");
  std::printf("  %2d at once: peak RSS %6.1f MiB, %5.1f MiB above the process's %5.1f MiB before, %7.1f ms%s\n", n,
              peak / 1024.0, (peak - before) / 1024.0, before / 1024.0, ms, failed ? " (some reads failed)" : "");
  std::fflush(stdout);
}

}  // namespace

int main() {
  testing::TempDir dir;
  const std::string socket = dir.path() + "/api.sock";
  int ready[2], done[2];
  if (pipe(ready) != 0 || pipe(done) != 0) return 1;
  std::fflush(stdout);
  // Forks happen while this process has no thread but its own: the server's child, then one
  // child per round.
  pid_t server_pid = fork();
  if (server_pid == 0) {
    close(ready[0]);
    close(done[1]);
    testing::FakeApiServer server;
    if (!server.Start(socket)) _exit(1);
    size_t bytes = 0;
    for (int i = 0; i < kClaims; ++i) {
      json claim = LargeClaim("big-" + std::to_string(i));
      bytes = claim.dump().size();
      server.AddClaim(std::move(claim));
    }
    if (write(ready[1], &bytes, sizeof bytes) != sizeof bytes) _exit(1);
    char b;
    while (read(done[0], &b, 1) > 0) {
    }
    server.Stop();
    _exit(0);
  }
  close(ready[1]);
  close(done[0]);
  size_t claim_bytes = 0;
  if (read(ready[0], &claim_bytes, sizeof claim_bytes) != sizeof claim_bytes) {
    std::fprintf(stderr, "fake API server did not start\n");
    return 1;
  }
  std::printf("dra_claim_memory_bench: N claim reads at once of %.2f MB claims (45,000 labels + managedFields),\n"
              "at most %d in flight (ApiClaimReader::kMaxConcurrentReads), each round in a fresh process\n",
              claim_bytes / 1e6, static_cast<int>(dra::ApiClaimReader::kMaxConcurrentReads));
  std::fflush(stdout);
  int rc = 0;
  for (int n : {1, 4, 16}) {
    pid_t round = fork();
    if (round == 0) {
      Round(socket, n);
      _exit(0);
    }
    int status = 0;
    waitpid(round, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = 1;
  }
  close(done[1]);
  int status = 0;
  waitpid(server_pid, &status, 0);
  return rc;
}
