#include "dra/claim_cdi_spec.h"

#include <map>

#include "node/allocate.h"
#include "node/cdi_spec.h"

namespace rdmak8s::dra {

std::string ClaimCdiKind(const std::string& driver) { return driver + "/claim"; }

std::string ClaimCdiDeviceId(const std::string& driver, const std::string& claim_uid,
                             const std::string& device) {
  return ClaimCdiKind(driver) + "=" + claim_uid + "-" + device;
}

std::string ClaimCdiSpecPath(const std::string& cdi_dir, const std::string& driver,
                             const std::string& claim_uid) {
  return cdi_dir + "/" + driver + "-claim_" + claim_uid + ".json";
}

std::string BuildClaimCdiSpec(const std::string& driver, const std::string& claim_uid,
                              const std::vector<ClaimDevice>& devices, const std::string& dev_root) {
  std::map<std::string, std::vector<const RdmaDevice*>> by_request;
  for (const auto& d : devices) by_request[d.request].push_back(&d.dev);
  std::vector<node::CdiDevice> cdi;
  for (const auto& d : devices) {
    cdi.push_back({claim_uid + "-" + d.device, node::CharDevicesFor(d.dev, d.options, dev_root),
                   node::AllocationEnv(by_request[d.request], d.options)});
  }
  return node::BuildCdiSpecDocument(ClaimCdiKind(driver), cdi);
}

}  // namespace rdmak8s::dra
