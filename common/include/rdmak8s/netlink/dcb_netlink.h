// DcbNetlink: IEEE 802.1Qaz DCB over rtnetlink (RTM_GETDCB/RTM_SETDCB, DCB_CMD_IEEE_GET/SET/DEL),
// the layout iproute2's `dcb` uses: PFC enable per priority, the APP table (DSCP -> priority)
// and the APP trust table where the kernel has it (DCB_ATTR_DCB_APP_TRUST_TABLE, Linux 6.4+).
//
// Message encoding/decoding lives in dcb_codec.h as pure functions tested on bytes; the real
// implementation only does socket I/O. Tests of consumers use FakeDcbNetlink (tests/).
//
// Thread safety: one instance per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "rdmak8s/base/status.h"

namespace rdmak8s {

struct PfcState {
  uint8_t pfc_cap = 0;     // number of traffic classes that may have PFC on
  uint8_t enabled = 0;     // bit p set = PFC on for priority p (0..7)
  uint16_t delay = 0;
};

// IEEE_8021QAZ_APP_SEL_*: 1 ethertype, 2 TCP/SCTP port, 3 UDP/DCCP port, 4 any port, 5 DSCP.
inline constexpr uint8_t kDcbAppSelDscp = 5;
// Pseudo-selector the kernel uses in the trust table for PCP (DCB_APP_SEL_PCP, 255).
inline constexpr uint8_t kDcbAppSelPcp = 255;

struct DcbAppEntry {
  uint8_t selector = kDcbAppSelDscp;
  uint16_t protocol = 0;   // DSCP value for selector 5
  uint8_t priority = 0;
  friend bool operator==(const DcbAppEntry&, const DcbAppEntry&) = default;
};

// What the device trusts for classifying ingress traffic, in order (selectors).
// kDscp is the trust table [DSCP, PCP] (`dcb apptrust set dev X order dscp pcp`), kPcp is [PCP];
// a table read back is classified by its first selector (dcb_codec.h TrustFromSelectors).
enum class DcbTrust { kPcp, kDscp };

// Every call names a netdev; kInvalidArgument for a bad interface name, kNotFound (ENODEV) for
// a missing one, kUnimplemented when the netdev has no DCB ops (the kernel answers EOPNOTSUPP).

// Priority flow control (DCB_ATTR_IEEE_PFC, `dcb pfc`).
class DcbPfc {
 public:
  virtual ~DcbPfc() = default;
  virtual StatusOr<PfcState> GetPfc(std::string_view netdev) = 0;
  virtual Status SetPfcEnabled(std::string_view netdev, uint8_t enabled_mask) = 0;
};

// The APP table (DCB_ATTR_IEEE_APP_TABLE, `dcb app`).
class DcbAppTable {
 public:
  virtual ~DcbAppTable() = default;
  virtual StatusOr<std::vector<DcbAppEntry>> GetApp(std::string_view netdev) = 0;
  virtual Status AddApp(std::string_view netdev, const std::vector<DcbAppEntry>& entries) = 0;
  virtual Status DelApp(std::string_view netdev, const std::vector<DcbAppEntry>& entries) = 0;
};

// The APP trust table (DCB_ATTR_DCB_APP_TRUST_TABLE, `dcb apptrust`).
class DcbAppTrust {
 public:
  virtual ~DcbAppTrust() = default;
  // kUnimplemented when the kernel or driver has no trust table.
  virtual StatusOr<DcbTrust> GetTrust(std::string_view netdev) = 0;
  virtual Status SetTrust(std::string_view netdev, DcbTrust trust) = 0;
};

// The three roles over one rtnetlink socket, as NewDcbNetlink opens it. Code that needs one
// role takes that interface; this composition adds nothing.
class DcbNetlink : public DcbPfc, public DcbAppTable, public DcbAppTrust {};

StatusOr<std::unique_ptr<DcbNetlink>> NewDcbNetlink();

}  // namespace rdmak8s
