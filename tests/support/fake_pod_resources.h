// FakePodResources: kubelet's pod-resources API (v1 PodResourcesLister: List, Get,
// GetAllocatableResources) on a unix socket, answered from the allocations recorded with it, as
// kubelet answers from its device manager's record of which container of which pod each Allocate
// was for. For the CNI's tests and the fake kubelet (tests/tools/fake_kubelet_main.cc).
//
// As kubelet (pkg/kubelet/apis/podresources/server_v1.go) does:
//   - List: every pod it knows, each container with its devices per resource;
//   - Get of a pod it does not know: NOT_FOUND "pod <name> in namespace <ns> not found";
//   - GetAllocatableResources: every device ID of every recorded allocation, per resource.
// A test can make it answer something else (a broken or hostile kubelet) with SetListAnswer, or
// hold every answer until released (a hung kubelet) with Hold.
//
// Thread safety: all methods may be called from any thread.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "podresources/v1/api.grpc.pb.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::fake {

class FakePodResources {
 public:
  // A pod as kubelet knows it.
  struct Pod {
    std::string pod_namespace;
    std::string name;
    std::string uid;
  };

  // Nothing is served until Start().
  explicit FakePodResources(std::string socket_path);
  ~FakePodResources();
  FakePodResources(const FakePodResources&) = delete;
  FakePodResources& operator=(const FakePodResources&) = delete;

  // Serves on the socket path (an old socket there is replaced).
  Status Start();
  // Stops serving (releases a Hold first) and removes the socket.
  void Stop();
  const std::string& socket_path() const { return socket_path_; }

  // Records that `container` of `pod` got `ids` of `resource` (one Allocate of kubelet's).
  void RecordAllocation(const Pod& pod, const std::string& container, const std::string& resource,
                        const std::vector<std::string>& ids);
  // Forgets a pod (kubelet's pod deleted).
  void RemovePod(const std::string& pod_namespace, const std::string& name);

  // Every List answers `answer` instead of the recorded pods; nullopt: the recorded ones again.
  void SetListAnswer(std::optional<v1::ListPodResourcesResponse> answer);
  // From now on every RPC waits until Release() (or Stop()) before it answers.
  void Hold();
  void Release();
  // How many RPCs arrived (counted before any Hold).
  size_t calls() const;

 private:
  class Service;
  struct Allocation {
    Pod pod;
    std::string container;
    std::string resource;
    std::vector<std::string> ids;
  };

  // The pods as kubelet would list them.
  std::vector<v1::PodResources> Pods() const;
  void WaitIfHeld();

  const std::string socket_path_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Allocation> allocations_;
  std::optional<v1::ListPodResourcesResponse> list_answer_;
  bool held_ = false;
  size_t calls_ = 0;
};

}  // namespace rdmak8s::fake
