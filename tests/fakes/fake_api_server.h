// FakeApiServer: a stand-in for kube-apiserver's resource.k8s.io and nodes endpoints, spoken to
// for real over HTTP/1.1 (a unix socket, or TLS on 127.0.0.1 with a certificate of the test's).
//
// Real JSON shapes: ResourceSlice in v1 (flat devices) and v1beta1 (devices[].basic), stored in
// one internal form so a slice written in one version reads back in the other; APIGroup
// discovery of resource.k8s.io; Status objects for errors; ResourceClaim and Node gets.
// Real rules the tests lean on: resourceVersion checked on PUT (409), name taken on POST (409),
// paged lists (limit/continue) with fieldSelector spec.nodeName / spec.driver, the API's slice
// limits (422), a bearer token checked per request (401), fields of disabled feature gates
// (device taints, allowMultipleAllocations, binding conditions) dropped from what is stored.
// Watches on resourceslices (watch=true, with the fieldSelector, resourceVersion,
// timeoutSeconds, BOOKMARK-less): without a resourceVersion the current objects come first as
// ADDED, then every change as a chunked stream of one JSON event per line, as the real server
// sends; a resourceVersion older than the kept history gets an ERROR event with a 410 Status
// (Expired), as the real one does after compaction.
// Ownership as the real garbage collector does it: a slice whose ownerReference names a Node
// that is gone or has another UID is deleted at once after the write that stored it, or when
// the Node is deleted or re-created (the real GC takes ~50 ms; "at once" is the strictest).
// Validation as the v1 server's (answers 422 Invalid naming the field): metadata.name a DNS
// subdomain, driver a DNS subdomain of at most 63, device names DNS labels, attribute and
// capacity names qualified names (a C identifier of at most 32 after an optional DNS-subdomain
// domain of at most 63 and "/"), string and version values at most 64, at most 32 attributes
// and capacities per device, at most 128 devices per slice (64 when any has taints), at most 4
// taints per device with a qualified-name key, a label value and effect NoSchedule or NoExecute;
// bindingConditions and bindingFailureConditions (KEP-5007, validateDeviceBindingParameters): at
// most 4 each, each a label name, no duplicates, none in both, each list requiring the other.
// DELETE of the collection with a fieldSelector (kubelet's DeleteCollection at its start).
// The resource.k8s.io versions it serves can change while it runs (an upgrade).
// ResourceClaim status updates (PUT .../status) as v1.36 takes them: resourceVersion checked (409),
// status.devices validated and authorized per driver (fake_claim_status.h), the rest kept.
// The scheduler's part (fake_allocator.h): after every change of the slices or the claims, a
// claim without status.allocation is allocated from the slices (taints, tolerations,
// firstAvailable), and binding conditions are waited for; the binding state is the claim's
// annotation fake.rdmak8s.io/binding.
// Injected faults: the next N answers of a given status (429 with Retry-After, 503), N
// conflicting writers, N expired continue tokens (410), raw answers of any body.
//
// Thread safety: all methods may be called from the test while the server serves.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <optional>
#include <cstdint>
#include <map>
#include <set>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "fakes/fake_allocator.h"

namespace rdmak8s::testing {

struct FakeApiServerOptions {
  bool serve_v1 = true;
  bool serve_v1beta1 = true;
  bool device_taints = true;        // DRADeviceTaints gate
  bool consumable_capacity = true;  // DRAConsumableCapacity gate
  // DRADeviceBindingConditions gate (with DRAResourceClaimDeviceStatus): off, a device's
  // bindingConditions, bindingFailureConditions and bindsToNode are dropped, as 1.34/1.35 do.
  bool device_binding_conditions = true;
  std::string token;                // when set, requests must carry "Bearer <token>"
  // TLS (both set): serve HTTPS on 127.0.0.1 instead of HTTP on a unix socket.
  std::string tls_cert_pem, tls_key_pem;
};

class FakeApiServer {
 public:
  explicit FakeApiServer(FakeApiServerOptions options = {});
  ~FakeApiServer();

  // Listens on `unix_socket` (or, with TLS, on an ephemeral 127.0.0.1 port). False on failure.
  bool Start(const std::string& unix_socket = "");
  void Stop();
  // "http://localhost" (with the unix socket) or "https://127.0.0.1:<port>".
  std::string url() const;

  void SetToken(std::string token);
  // Creates the Node, or re-creates it with `uid` (the garbage collector then deletes slices
  // owned by the old one).
  void AddNode(const std::string& name, const std::string& uid);
  // Deletes the Node; the garbage collector deletes the slices it owns.
  void DeleteNode(const std::string& name);
  // Which resource.k8s.io versions are served from now on (discovery and paths).
  void SetServedVersions(bool v1, bool v1beta1);
  // Deletes the slices matching (empty: any) node and driver, as kubelet's DeleteCollection
  // with a fieldSelector does; returns how many.
  int DeleteSlices(const std::string& node, const std::string& driver = "");
  // Forgets the watch history, as a restarted server's watch cache does: a watch from any
  // resourceVersion given out so far gets 410 Expired.
  void CompactWatchHistory();
  // Ends every open watch now (as an API server restart does).
  void EndWatches();
  // Watches being served now.
  int open_watches() const;
  // `claim` is a ResourceClaim object (metadata.namespace / name); it gets a resourceVersion.
  void AddClaim(nlohmann::json claim);
  // Deletes the claim (its devices are free for other claims from now on); false when none.
  bool DeleteClaim(const std::string& namespace_name, const std::string& name);
  // The stored claim (v1 shape), null when there is none.
  nlohmann::json Claim(const std::string& namespace_name, const std::string& name) const;
  // Which drivers' status.devices entries the caller's token may change (resourceclaims/driver
  // with that resourceName: the DRAResourceClaimGranularStatusAuthorization rule,
  // fake_claim_status.h). None by default, as a token without the RBAC.
  void GrantClaimStatus(std::set<std::string> drivers);
  // The next `count` status updates of a claim meet another writer first: `entry` (another
  // driver's status.devices entry) is added to the stored claim, its resourceVersion moves on,
  // and the update gets 409.
  void ConflictNextClaimStatusUpdates(nlohmann::json entry, int count = 1);

  // The next `count` requests (of any kind) are answered `status` with a Status body.
  void FailNext(int status, int count = 1, std::string retry_after = "");
  // The next `count` requests whose "METHOD path" starts with `prefix` are answered `status`
  // with `body` as it is (hostile or malformed answers).
  void AnswerNext(const std::string& prefix, int status, std::string body, int count = 1);
  // The next `count` PUTs of a slice meet another writer first: its resourceVersion moves on
  // and the PUT gets 409.
  void ConflictNextUpdates(int count);
  // The next `count` list pages asked with a continue token get 410 Gone (Expired).
  void ExpireNextContinues(int count);
  // Faults for one path (issue 24: a slow API server must not stall the node). Requests whose
  // path (before '?') starts with `path_prefix` get no answer until ReleaseHeld() or Stop(): a
  // hung read. Other requests are answered meanwhile (each connection has its own thread).
  void HoldRequests(std::string path_prefix);
  void ReleaseHeld();
  // Waits until `n` requests are being held, at most `bound`: false when they were not.
  bool WaitForHeld(int n, std::chrono::milliseconds bound);
  // The next `count` requests whose path starts with `path_prefix` are answered `status`
  // (Retry-After `retry_after` when not empty); other paths are answered as usual.
  void FailNextFor(std::string path_prefix, int status, int count, std::string retry_after = "");
  // Another client's slice, stored as is (v1 shape).
  void PutSliceV1(nlohmann::json slice);

  // Stored slices in `version`'s shape ("v1" | "v1beta1"), sorted by name.
  std::vector<nlohmann::json> Slices(const std::string& version = "v1") const;
  // "METHOD path" of every request, in order.
  std::vector<std::string> Requests() const;
  int CountRequests(const std::string& method_prefix) const;

 private:
  struct WatchSpec {
    std::string version, node, driver;
    int64_t from = -1;  // resourceVersion; -1: from now, current objects first
    int timeout_s = 1800;
  };
  struct Response {
    Response() = default;
    Response(int s, std::string b, std::string r) : status(s), body(std::move(b)), retry_after(std::move(r)) {}
    int status = 200;
    std::string body;
    std::string retry_after;
    std::optional<WatchSpec> watch;  // stream a watch instead of `body`
  };
  struct Event {
    int64_t rv;
    std::string type;
    nlohmann::json object;  // v1 shape
  };
  // Under mu_: a change of slices_ for the watches.
  void RecordLocked(const std::string& type, const nlohmann::json& object);
  void CollectGarbageLocked();
  // The scheduler's pass (fake_allocator.h) after a change; moves changed claims' resourceVersion.
  void AllocateLocked();
  bool ServedLocked(const std::string& version) const;
  bool ServeWatch(void* conn, const WatchSpec& spec);
  void AcceptLoop();
  void Serve(int fd);
  Response Handle(const std::string& method, const std::string& target,
                  const std::map<std::string, std::string>& headers, const std::string& body);
  // PUT .../resourceclaims/<name>/status (fake_claim_status.h's rules); under mu_.
  Response HandleClaimStatus(const std::string& key, const std::string& body);
  Response HandleSlices(const std::string& method, const std::string& version,
                        const std::string& name, const std::map<std::string, std::string>& query,
                        const std::string& body);

  // Blocks while `target` is to be held (HoldRequests); not under mu_.
  void HoldIfAsked(const std::string& target);

  const FakeApiServerOptions options_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::string socket_path_;
  void* ssl_ctx_ = nullptr;  // SSL_CTX*
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;

  mutable std::mutex mu_;
  std::vector<std::thread> conn_threads_;
  std::vector<int> conn_fds_;
  std::string token_;
  std::map<std::string, nlohmann::json> slices_;  // name -> v1 object
  std::map<std::string, nlohmann::json> claims_;  // "ns/name" -> object
  std::map<std::string, std::string> nodes_;      // name -> uid
  std::set<std::string> status_grants_;           // GrantClaimStatus
  FakeAllocator allocator_;
  nlohmann::json status_conflict_entry_;          // ConflictNextClaimStatusUpdates
  int status_conflicts_ = 0;
  int64_t resource_version_ = 100;
  int fail_count_ = 0, fail_status_ = 0;
  std::string fail_retry_after_;
  int conflicts_ = 0, expire_continues_ = 0;
  std::vector<std::string> requests_;
  bool serve_v1_ = true, serve_v1beta1_ = true;
  struct Canned {
    std::string prefix;
    int status;
    std::string body;
    int count;
  };
  std::vector<Canned> canned_;
  std::vector<Event> events_;  // the watch history
  int64_t oldest_rv_ = 0;      // a watch from before this is too old
  uint64_t watch_epoch_ = 0;   // EndWatches moves it on
  int open_watches_ = 0;
  std::condition_variable events_cv_;
  std::string fail_path_, fail_path_retry_after_;  // FailNextFor; mu_
  int fail_path_count_ = 0, fail_path_status_ = 0;

  std::mutex hold_mu_;
  std::condition_variable hold_cv_;
  std::string hold_prefix_;  // hold_mu_; "" holds nothing
  int held_ = 0;             // requests being held; hold_mu_
  uint64_t releases_ = 0;    // ReleaseHeld calls; hold_mu_
};

// A self-signed certificate (EC P-256, SAN IP:127.0.0.1 and DNS:localhost) and its key, PEM.
struct TestCertificate {
  std::string cert_pem, key_pem;
};
TestCertificate MakeSelfSignedCertificate();

}  // namespace rdmak8s::testing
