// DraMetrics: the DRA driver's own Prometheus metrics and its probes, served as both agents serve
// theirs (node/agent_http.h on node/http_server.h, the loop heartbeats of node/probes.h: probes
// answered on its loop from memory, never behind a scrape; a scrape computed on its worker, one at
// a time, shared for 2 s) on --metrics-address. Names and labels are listed in docs/dra.md#metrics-and-the-probes.
//
// What moves them: the DRA services count each claim's prepare (with its latency) and unprepare
// (kubelet/dra_service.h), the slice loop reports each publish (ObservePublish), the kube client each
// error answer (CountApiError), the plugin kubelet's registration verdict (SetRegistered). The
// health of each device is read from the DeviceCatalog at scrape time: the health the driver
// streams to kubelet (kubelet/health_service.h), so the two cannot disagree.
//
// /livez answers 200 "ok" while every loop that beats (Heartbeat) has beaten within its stall
// bound: the process works, whatever kubelet or the API server do. /readyz answers 200 when it is
// also registered with kubelet (GetInfo answered, NotifyRegistrationStatus(registered=true) since
// the registration socket was last served) and, with an API server, the slices were published
// at least once since start. Otherwise 503 with a one-line reason.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "dra/device_catalog.h"
#include "node/http_server.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::dra {

class DraMetrics {
 public:
  // `catalog` (not owned, may be null: no device health) must outlive the metrics.
  // `slices_expected`: false with --no-api-server (nothing is ever published, and readiness does
  // not wait for it).
  DraMetrics(const DeviceCatalog* catalog, bool slices_expected);
  ~DraMetrics();
  DraMetrics(const DraMetrics&) = delete;
  DraMetrics& operator=(const DraMetrics&) = delete;

  // Starts the HTTP server for /metrics, /livez and /readyz ("host:port"; port 0 picks one).
  // kUnavailable naming the address and the cause when it cannot
  // ("metrics listen on 127.0.0.1:9470: bind: Address already in use").
  Status Serve(const std::string& address);
  // Stops the HTTP server at once (open connections are closed). The destructor does too.
  void Stop();
  // The bound port after Serve (0 before).
  int port() const;

  // One claim of a NodePrepareResources call, and how long the driver took for it.
  void ObservePrepare(bool ok, std::chrono::duration<double> took);
  // One claim of a NodeUnprepareResources call.
  void CountUnprepare(bool ok);
  // One write of a claim's status.devices entries (claim_status_reporter.h): "ok",
  // "forbidden" (the server refused it: RBAC), "error".
  void CountClaimStatusWrite(std::string_view result);
  // One publish pass of the slice loop; on success, what the server now holds of this node's
  // pool.
  void ObservePublish(bool ok, int slices, int devices);
  // What the slice loop's health-change limit and its writes add up to (cumulative counts).
  struct SliceHealthFigures {
    int tainted_devices = 0;      // published unhealthy
    int held_devices = 0;         // whose health change is held (health_change_limit.h)
    uint64_t changes_published = 0;
    uint64_t changes_held = 0;
    uint64_t slice_writes = 0;    // ResourceSlice creates, updates and deletes
  };
  void ObserveSliceHealth(const SliceHealthFigures& figures);
  // An answer of the API server that is an error (`code` its HTTP status, "none" when no answer
  // came), by verb (the HTTP method; WATCH for a watch).
  void CountApiError(std::string_view verb, std::string_view code);
  // Kubelet's verdict on our registration; false when the registration socket is served
  // (again): the next kubelet has not answered yet.
  void SetRegistered(bool registered);

  // `loop` is alive; a loop that has beaten once is reported stalled by /livez and /readyz when
  // its last beat is older than `stall_after` ("<loop> stalled: no wakeup for <N>s").
  void Heartbeat(const std::string& loop, std::chrono::seconds stall_after);

  // Empty when live, else the one-line reason /livez answers with 503.
  std::string NotLive() const;
  // Empty when ready, else the one-line reason /readyz answers with 503.
  std::string Unready() const;

  // The text exposition of everything (what /metrics answers).
  std::string Scrape() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmak8s::dra
