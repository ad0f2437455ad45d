#include "device-plugin/metrics/counter_names.h"


namespace rdmak8s::dp {
namespace {

using K = CounterKind;

struct Named {
  std::string_view name;
  CounterKind kind;
};

// ports/<p>/counters: the PMA attributes of drivers/infiniband/core/sysfs.c (pma_attrs, the
// extended set included); the others (data, packets, unicast/multicast) are kOther.
constexpr Named kPma[] = {
    {"symbol_error", K::kLinkError},
    {"port_rcv_errors", K::kLinkError},
    {"port_rcv_remote_physical_errors", K::kLinkError},
    {"port_rcv_switch_relay_errors", K::kLinkError},
    {"link_error_recovery", K::kLinkError},
    {"local_link_integrity_errors", K::kLinkError},
    {"excessive_buffer_overrun_errors", K::kLinkError},
    {"link_downed", K::kLinkDowned},
    {"port_xmit_discards", K::kDiscard},
    {"port_xmit_constraint_errors", K::kDiscard},
    {"port_rcv_constraint_errors", K::kDiscard},
    {"VL15_dropped", K::kDiscard},
    {"port_xmit_wait", K::kXmitWait},
};

// ports/<p>/hw_counters, by driver (each driver's rdma_stat_desc names).
constexpr Named kHw[] = {
    // mlx5_ib (drivers/infiniband/hw/mlx5/counters.c)
    {"np_ecn_marked_roce_packets", K::kEcnMarked},  // also bnxt_re since 6.5
    {"np_cnp_sent", K::kCnpSent},                   // also bnxt_re
    {"rp_cnp_handled", K::kCnpHandled},             // also bnxt_re
    {"rp_cnp_ignored", K::kCnpIgnored},
    {"out_of_sequence", K::kOutOfSequence},
    {"packet_seq_err", K::kSequenceError},
    {"implied_nak_seq_err", K::kSequenceError},
    {"local_ack_timeout_err", K::kTimeout},
    {"rnr_nak_retry_err", K::kRnrNak},
    {"duplicate_request", K::kDuplicateRequest},  // also rdma_rxe
    {"roce_adp_retrans", K::kRetransmit},
    {"roce_adp_retrans_to", K::kTimeout},
    {"rx_icrc_encapsulated", K::kIcrcError},
    {"out_of_buffer", K::kOutOfBuffer},  // also bnxt_re since 6.5
    // irdma (drivers/infiniband/hw/irdma/verbs.c irdma_hw_stat_descs; gen3 names have spaces)
    {"RxECNMrkd", K::kEcnMarked},
    {"cnpSent", K::kCnpSent},
    {"cnpHandled", K::kCnpHandled},
    {"cnpIgnored", K::kCnpIgnored},
    {"RetransSegs", K::kRetransmit},
    {"Rcvd Out of order packets", K::kOutOfSequence},
    {"Nak Sequence Error", K::kSequenceError},
    {"Nak Sequence Error Implied", K::kSequenceError},
    {"RTO", K::kTimeout},
    {"RNR received", K::kRnrNak},
    {"CRC errors", K::kIcrcError},
    // bnxt_re (drivers/infiniband/hw/bnxt_re/hw_counters.c; names before and after 6.5)
    {"rx_ecn_marked_pkts", K::kEcnMarked},
    {"tx_cnp_pkts", K::kCnpSent},
    {"np_cnp_pkts", K::kCnpSent},
    {"rx_cnp_pkts", K::kCnpHandled},
    {"oos_drop_count", K::kOutOfSequence},
    {"seq_err_naks_rcvd", K::kSequenceError},
    {"to_retransmits", K::kRetransmit},
    {"max_retry_exceeded", K::kTimeout},
    {"rnr_naks_rcvd", K::kRnrNak},
    {"dup_req", K::kDuplicateRequest},
    {"rx_out_of_buffer", K::kOutOfBuffer},
    {"rx_roce_discards", K::kDiscard},
    // rdma_rxe (drivers/infiniband/sw/rxe/rxe_hw_counters.c)
    {"out_of_seq_request", K::kOutOfSequence},
    {"rcvd_seq_err", K::kSequenceError},
    {"rcvd_rnr_err", K::kRnrNak},
    {"retry_rnr_exceeded_err", K::kRnrNak},
    {"retry_exceeded_err", K::kTimeout},
    {"completer_retry_err", K::kRetransmit},
    {"link_downed", K::kLinkDowned},
};

template <size_t N>
std::optional<CounterKind> Find(const Named (&table)[N], std::string_view name) {
  for (const Named& n : table) {
    if (n.name == name) return n.kind;
  }
  return std::nullopt;
}

// "<prefix><digit><suffix>" -> the digit (0..7).
std::optional<uint8_t> PriorityBetween(std::string_view name, std::string_view prefix,
                                       std::string_view suffix) {
  if (name.size() != prefix.size() + 1 + suffix.size()) return std::nullopt;
  if (name.substr(0, prefix.size()) != prefix) return std::nullopt;
  if (name.substr(prefix.size() + 1) != suffix) return std::nullopt;
  char c = name[prefix.size()];
  if (c < '0' || c > '7') return std::nullopt;
  return static_cast<uint8_t>(c - '0');
}

}  // namespace

std::string_view CounterKindName(CounterKind kind) {
  switch (kind) {
    case K::kOther: return "other";
    case K::kEcnMarked: return "ecn_marked";
    case K::kCnpSent: return "cnp_sent";
    case K::kCnpHandled: return "cnp_handled";
    case K::kCnpIgnored: return "cnp_ignored";
    case K::kOutOfSequence: return "out_of_sequence";
    case K::kSequenceError: return "sequence_error";
    case K::kRetransmit: return "retransmit";
    case K::kTimeout: return "timeout";
    case K::kRnrNak: return "rnr_nak";
    case K::kDuplicateRequest: return "duplicate_request";
    case K::kIcrcError: return "icrc_error";
    case K::kOutOfBuffer: return "out_of_buffer";
    case K::kDiscard: return "discard";
    case K::kLinkError: return "link_error";
    case K::kLinkDowned: return "link_downed";
    case K::kXmitWait: return "xmit_wait";
  }
  return "other";
}

std::optional<CounterMeaning> ClassifyPortCounter(std::string_view name, bool hw_counters) {
  if (!hw_counters) return CounterMeaning{Find(kPma, name).value_or(K::kOther), true};
  // drivers/infiniband/core/sysfs.c: the cache lifetime of the values, in ms.
  if (name == "lifespan") return std::nullopt;
  // bnxt_re: resources in use now and their high-water marks, not events.
  if (name.starts_with("active_") || name.starts_with("watermark_")) {
    return CounterMeaning{K::kOther, false};
  }
  return CounterMeaning{Find(kHw, name).value_or(K::kOther), true};
}

std::string_view PauseDirectionName(PauseDirection d) {
  return d == PauseDirection::kRx ? "rx" : "tx";
}

std::optional<PfcPauseStat> ParsePfcPauseStat(std::string_view name) {
  struct Pattern {
    std::string_view prefix;
    std::string_view suffix;
    PauseDirection dir;
  };
  static constexpr Pattern kPatterns[] = {
      {"rx_prio", "_pause", PauseDirection::kRx},                // mlx5_core
      {"tx_prio", "_pause", PauseDirection::kTx},
      {"rx_priority_", "_xoff.nic", PauseDirection::kRx},        // ice
      {"tx_priority_", "_xoff.nic", PauseDirection::kTx},
      {"rx_pfc_ena_frames_pri", "", PauseDirection::kRx},        // bnxt_en
      {"tx_pfc_ena_frames_pri", "", PauseDirection::kTx},
  };
  for (const Pattern& p : kPatterns) {
    if (auto prio = PriorityBetween(name, p.prefix, p.suffix)) return PfcPauseStat{*prio, p.dir};
  }
  return std::nullopt;
}

}  // namespace rdmak8s::dp
