// What the kernel's counter names mean (device-plugin/metrics/counter_names.h): the same kind for the
// same event whatever the driver calls it, gauges told from counters, PFC pause statistics of
// mlx5_core, ice and bnxt_en found by their ethtool names.
#include "device-plugin/metrics/counter_names.h"

#include <gtest/gtest.h>

namespace rdmak8s::dp {
namespace {

std::string KindOf(std::string_view name, bool hw = true) {
  auto m = ClassifyPortCounter(name, hw);
  return m ? std::string(CounterKindName(m->kind)) : "not a counter";
}

TEST(CounterNamesTest, CongestionCountersOfEveryDriverShareOneKind) {
  for (const char* n : {"np_cnp_sent", "cnpSent", "np_cnp_pkts", "tx_cnp_pkts"}) {
    EXPECT_EQ(KindOf(n), "cnp_sent") << n;
  }
  for (const char* n : {"rp_cnp_handled", "cnpHandled", "rx_cnp_pkts"}) {
    EXPECT_EQ(KindOf(n), "cnp_handled") << n;
  }
  for (const char* n : {"np_ecn_marked_roce_packets", "RxECNMrkd", "rx_ecn_marked_pkts"}) {
    EXPECT_EQ(KindOf(n), "ecn_marked") << n;
  }
}

TEST(CounterNamesTest, LossAndRetransmissionCountersOfEveryDriverShareOneKind) {
  for (const char* n : {"out_of_sequence", "Rcvd Out of order packets", "oos_drop_count",
                        "out_of_seq_request"}) {
    EXPECT_EQ(KindOf(n), "out_of_sequence") << n;
  }
  for (const char* n : {"packet_seq_err", "implied_nak_seq_err", "Nak Sequence Error",
                        "seq_err_naks_rcvd", "rcvd_seq_err"}) {
    EXPECT_EQ(KindOf(n), "sequence_error") << n;
  }
  for (const char* n : {"roce_adp_retrans", "to_retransmits", "RetransSegs"}) {
    EXPECT_EQ(KindOf(n), "retransmit") << n;
  }
  EXPECT_EQ(KindOf("local_ack_timeout_err"), "timeout");
  EXPECT_EQ(KindOf("RTO"), "timeout");
  EXPECT_EQ(KindOf("rnr_nak_retry_err"), "rnr_nak");
  EXPECT_EQ(KindOf("duplicate_request"), "duplicate_request");
  EXPECT_EQ(KindOf("dup_req"), "duplicate_request");
  EXPECT_EQ(KindOf("CRC errors"), "icrc_error");
}

TEST(CounterNamesTest, PmaCountersAreJudgedOnlyInTheCountersDirectory) {
  EXPECT_EQ(KindOf("symbol_error", false), "link_error");
  EXPECT_EQ(KindOf("port_rcv_errors", false), "link_error");
  EXPECT_EQ(KindOf("link_downed", false), "link_downed");
  EXPECT_EQ(KindOf("port_xmit_discards", false), "discard");
  EXPECT_EQ(KindOf("port_xmit_wait", false), "xmit_wait");
  EXPECT_EQ(KindOf("port_rcv_data", false), "other");
  EXPECT_EQ(KindOf("np_cnp_sent", false), "other") << "not a PMA attribute";
}

TEST(CounterNamesTest, UnknownNamesAreCountersOfKindOtherAndLifespanIsNoCounter) {
  EXPECT_EQ(KindOf("rx_write_requests"), "other");
  EXPECT_EQ(KindOf("some_future_counter"), "other");
  EXPECT_TRUE(ClassifyPortCounter("some_future_counter", true)->monotonic);
  EXPECT_EQ(KindOf("lifespan"), "not a counter");
}

TEST(CounterNamesTest, BnxtReResourceCountsAreGauges) {
  for (const char* n : {"active_qps", "active_pds", "watermark_qps"}) {
    auto m = ClassifyPortCounter(n, true);
    ASSERT_TRUE(m) << n;
    EXPECT_FALSE(m->monotonic) << n;
  }
  EXPECT_TRUE(ClassifyPortCounter("to_retransmits", true)->monotonic);
}

TEST(CounterNamesTest, PfcPauseStatisticsOfMlx5IceAndBnxtEnGiveTheirPriority) {
  struct Case {
    const char* name;
    uint8_t prio;
    PauseDirection dir;
  };
  for (const Case& c : {Case{"rx_prio3_pause", 3, PauseDirection::kRx},
                        Case{"tx_prio0_pause", 0, PauseDirection::kTx},
                        Case{"rx_priority_5_xoff.nic", 5, PauseDirection::kRx},
                        Case{"tx_priority_7_xoff.nic", 7, PauseDirection::kTx},
                        Case{"rx_pfc_ena_frames_pri3", 3, PauseDirection::kRx},
                        Case{"tx_pfc_ena_frames_pri6", 6, PauseDirection::kTx}}) {
    auto s = ParsePfcPauseStat(c.name);
    ASSERT_TRUE(s) << c.name;
    EXPECT_EQ(s->priority, c.prio) << c.name;
    EXPECT_EQ(s->direction, c.dir) << c.name;
  }
}

TEST(CounterNamesTest, OtherEthtoolStatisticsAreNoPfcPause) {
  for (const char* n : {"rx_prio3_pause_duration", "rx_prio3_pause_transition", "rx_prio8_pause",
                        "rx_priority_3_xon.nic", "rx_pause_ctrl_phy", "tx_pfc_frames",
                        "rx_prio3_bytes", "rx_pfc_ena_frames_pri", "rx_pfc_ena_frames_pri10"}) {
    EXPECT_FALSE(ParsePfcPauseStat(n)) << n;
  }
}

}  // namespace
}  // namespace rdmak8s::dp
