// What the kernel's counter names mean, so a dashboard can ask "CNPs sent" of any driver:
//   - RDMA port counters: ports/<p>/counters/ (the IB PMA set drivers/infiniband/core/sysfs.c
//     exposes: port_rcv_errors, symbol_error, link_downed, port_xmit_discards, ...) and
//     ports/<p>/hw_counters/ (each driver's own rdma_stat_desc names: mlx5_ib counters.c,
//     irdma verbs.c, bnxt_re hw_counters.c, rdma_rxe rxe_hw_counters.c);
//   - per-priority PFC pause frames among a NIC driver's ethtool statistics (ETH_SS_STATS):
//     mlx5_core en_stats.c "rx_prio<N>_pause" / "tx_prio<N>_pause", ice ice_ethtool.c
//     "rx_priority_<N>_xoff.nic" / "tx_priority_<N>_xoff.nic", bnxt_en bnxt_ethtool.c
//     "rx_pfc_ena_frames_pri<N>" / "tx_pfc_ena_frames_pri<N>".
// Pure functions of the name; the names do not collide across drivers, so no driver argument.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rdmak8s::dp {

// What a counter shows, whatever the driver calls it.
enum class CounterKind {
  kOther,             // known to the kernel, not one of the kinds below (exported generically)
  kEcnMarked,         // RoCE packets received with ECN CE (notification point)
  kCnpSent,           // CNPs the notification point sent
  kCnpHandled,        // CNPs the reaction point received and slowed down for
  kCnpIgnored,        // CNPs the reaction point ignored
  kOutOfSequence,     // packets received out of sequence (a loss upstream)
  kSequenceError,     // NAK sequence errors received (explicit or implied)
  kRetransmit,        // retransmissions (adaptive, timeout driven, TCP segments for iWARP)
  kTimeout,           // local ACK timeouts / retry counts exceeded
  kRnrNak,            // receiver-not-ready NAKs
  kDuplicateRequest,  // duplicate requests received (the peer retransmitted)
  kIcrcError,         // packets dropped for a bad ICRC / CRC
  kOutOfBuffer,       // packets dropped for lack of a receive WQE
  kDiscard,           // packets discarded (PMA xmit discards, RoCE discards, VL15)
  kLinkError,         // physical / link layer errors (PMA)
  kLinkDowned,        // link down transitions (PMA link_downed)
  kXmitWait,          // ticks the port had data but no credits (IB congestion, PMA)
};

// "ecn_marked", "cnp_sent", ... "other": the `kind` label.
std::string_view CounterKindName(CounterKind kind);

struct CounterMeaning {
  CounterKind kind = CounterKind::kOther;
  // False for values that go up and down (bnxt_re's active_* and watermark_* resource counts):
  // a gauge, never rate()d.
  bool monotonic = true;
};

// The meaning of `name` in ports/<p>/counters (`hw_counters` false) or ports/<p>/hw_counters.
// nullopt for a file that is not a counter at all (hw_counters/lifespan: the kernel's cache time
// in ms).
std::optional<CounterMeaning> ClassifyPortCounter(std::string_view name, bool hw_counters);

enum class PauseDirection { kRx, kTx };
std::string_view PauseDirectionName(PauseDirection d);  // "rx" | "tx"

struct PfcPauseStat {
  uint8_t priority = 0;  // 0..7
  PauseDirection direction = PauseDirection::kRx;
};

// The priority and direction of a per-priority PFC pause counter among ethtool statistics, for
// the drivers above; nullopt for every other statistic (ice's "_xon" counters too: a pause
// frame is XOFF, an XON is the end of one).
std::optional<PfcPauseStat> ParsePfcPauseStat(std::string_view name);

}  // namespace rdmak8s::dp
