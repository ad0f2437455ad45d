// FakePodResources (tests/support/fake_pod_resources.h): kubelet's pod-resources API from
// recorded allocations.
#include "support/fake_pod_resources.h"

#include <unistd.h>

#include <map>

namespace rdmak8s::fake {

namespace {

template <typename T>
T* AddNew(std::vector<T>& list) { return &list.emplace_back(); }
template <typename T>
T* AddNew(google::protobuf::RepeatedPtrField<T>& list) { return list.Add(); }

// The element of `list` (a std::vector or a protobuf repeated field) that `match`es, else a new one.
template <typename List, typename Match>
auto* FindOrAdd(List& list, Match match) {
  for (auto& x : list) {
    if (match(x)) return &x;
  }
  return AddNew(list);
}

}  // namespace

class FakePodResources::Service final : public v1::PodResourcesLister::Service {
 public:
  explicit Service(FakePodResources* owner) : owner_(owner) {}

  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* resp) override {
    owner_->WaitIfHeld();
    {
      std::lock_guard<std::mutex> lock(owner_->mu_);
      if (owner_->list_answer_) {
        *resp = *owner_->list_answer_;
        return grpc::Status::OK;
      }
    }
    for (auto& p : owner_->Pods()) *resp->add_pod_resources() = std::move(p);
    return grpc::Status::OK;
  }

  grpc::Status Get(grpc::ServerContext*, const v1::GetPodResourcesRequest* req,
                   v1::GetPodResourcesResponse* resp) override {
    owner_->WaitIfHeld();
    for (auto& p : owner_->Pods()) {
      if (p.name() == req->pod_name() && p.namespace_() == req->pod_namespace()) {
        *resp->mutable_pod_resources() = std::move(p);
        return grpc::Status::OK;
      }
    }
    // kubelet's server_v1.go Get: the pod manager does not know the pod.
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "pod " + req->pod_name() + " in namespace " +
                                                         req->pod_namespace() + " not found");
  }

  grpc::Status GetAllocatableResources(grpc::ServerContext*, const v1::AllocatableResourcesRequest*,
                                       v1::AllocatableResourcesResponse* resp) override {
    owner_->WaitIfHeld();
    std::map<std::string, std::vector<std::string>> by_resource;
    {
      std::lock_guard<std::mutex> lock(owner_->mu_);
      for (const auto& a : owner_->allocations_) {
        auto& ids = by_resource[a.resource];
        ids.insert(ids.end(), a.ids.begin(), a.ids.end());
      }
    }
    for (const auto& [resource, ids] : by_resource) {
      auto* d = resp->add_devices();
      d->set_resource_name(resource);
      for (const auto& id : ids) d->add_device_ids(id);
    }
    return grpc::Status::OK;
  }

 private:
  FakePodResources* owner_;
};

FakePodResources::FakePodResources(std::string socket_path) : socket_path_(std::move(socket_path)) {}

FakePodResources::~FakePodResources() { Stop(); }

Status FakePodResources::Start() {
  if (server_) return Status::Ok();
  unlink(socket_path_.c_str());
  service_ = std::make_unique<Service>(this);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix://" + socket_path_, grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (!server_) return InternalError("serve " + socket_path_ + ": gRPC server did not start");
  return Status::Ok();
}

void FakePodResources::Stop() {
  if (!server_) return;
  Release();
  server_->Shutdown();
  server_.reset();
  service_.reset();
  unlink(socket_path_.c_str());
}

void FakePodResources::RecordAllocation(const Pod& pod, const std::string& container,
                                        const std::string& resource, const std::vector<std::string>& ids) {
  std::lock_guard<std::mutex> lock(mu_);
  allocations_.push_back({pod, container, resource, ids});
}

void FakePodResources::RemovePod(const std::string& pod_namespace, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(allocations_, [&](const Allocation& a) {
    return a.pod.pod_namespace == pod_namespace && a.pod.name == name;
  });
}

void FakePodResources::SetListAnswer(std::optional<v1::ListPodResourcesResponse> answer) {
  std::lock_guard<std::mutex> lock(mu_);
  list_answer_ = std::move(answer);
}

void FakePodResources::Hold() {
  std::lock_guard<std::mutex> lock(mu_);
  held_ = true;
}

void FakePodResources::Release() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = false;
  }
  cv_.notify_all();
}

size_t FakePodResources::calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

void FakePodResources::WaitIfHeld() {
  std::unique_lock<std::mutex> lock(mu_);
  ++calls_;
  cv_.wait(lock, [this] { return !held_; });
}

std::vector<v1::PodResources> FakePodResources::Pods() const {
  std::lock_guard<std::mutex> lock(mu_);
  // Pods in the order first allocated; containers likewise; one ContainerDevices per resource.
  std::vector<v1::PodResources> pods;
  for (const auto& a : allocations_) {
    v1::PodResources* pod = FindOrAdd(pods, [&](const v1::PodResources& p) {
      return p.namespace_() == a.pod.pod_namespace && p.name() == a.pod.name;
    });
    pod->set_name(a.pod.name);
    pod->set_namespace_(a.pod.pod_namespace);
    v1::ContainerResources* c =
        FindOrAdd(*pod->mutable_containers(), [&](const v1::ContainerResources& x) { return x.name() == a.container; });
    c->set_name(a.container);
    v1::ContainerDevices* d = FindOrAdd(
        *c->mutable_devices(), [&](const v1::ContainerDevices& x) { return x.resource_name() == a.resource; });
    d->set_resource_name(a.resource);
    for (const auto& id : a.ids) d->add_device_ids(id);
  }
  return pods;
}

}  // namespace rdmak8s::fake
