// SampleAttachmentFacts: one attachment's facts as the CNI writes them after ADD of a claimed RoCE
// device (rdmak8s/records/attachment_facts.h), valid as they are, for the tests of the facts, of
// the claim status built from them and of the trust table.
#pragma once

#include <string>

#include "rdmak8s/records/attachment_facts.h"

namespace rdmak8s::testing {

// Claim `claim_uid`, device `device` ("mlx5-<n>", RDMA device "mlx5_<n>") of rdma.rdmak8s.io,
// attachment roce/<container_id>/net1 on port 1, pod address 10.0.0.5/24 with its RoCE v2 GID at
// index 3, QoS trust and roceTos applied.
inline AttachmentFacts SampleAttachmentFacts(std::string claim_uid = "uid-1", std::string container_id = "c1",
                                             std::string device = "mlx5-1") {
  AttachmentFacts f;
  f.claim_uid = std::move(claim_uid);
  f.driver = "rdma.rdmak8s.io";
  f.rdma_dev = "mlx5_" + device.substr(device.rfind('-') + 1);
  f.device = std::move(device);
  f.network = "roce";
  f.container_id = std::move(container_id);
  f.ifname = "net1";
  f.ports = {1};
  f.ips = {"10.0.0.5/24"};
  f.hardware_address = "02:00:0a:00:00:05";
  f.gid = "0000:0000:0000:0000:0000:ffff:0a00:0005";
  f.gid_index = 3;
  f.qos = {"trust", "roceTos"};
  return f;
}

}  // namespace rdmak8s::testing
