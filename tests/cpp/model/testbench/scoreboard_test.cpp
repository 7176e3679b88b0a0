// The scoreboard's verdicts, fed by hand: what a failed check says.
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "driver/core/ib_qp.h"
#include "model/testbench/scoreboard.h"

namespace {

using namespace irdma_sim::testbench;
using namespace ibcore;

const Check& named(const std::vector<Check>& checks, const std::string& name) {
  auto it = std::find_if(checks.begin(), checks.end(), [&](const Check& c) { return c.name == name; });
  EXPECT_NE(it, checks.end()) << name;
  return *it;
}

// An 8-byte receive's completion, as the driver reports it.
ib_wc recv_wc(uint64_t wr_id, ib_qp* qp) {
  ib_wc wc{};
  wc.wr_id = wr_id;
  wc.opcode = IB_WC_RECV;
  wc.byte_len = 8;
  wc.qp = qp;
  return wc;
}

// Three receives complete, two with the wrong bytes: the check says how many failed, out
// of how many completions, and names the first.
TEST(Scoreboard, AFailedCheckCountsItsFailures) {
  Scoreboard sb(1);
  ib_qp qp;
  for (uint64_t id = 1; id <= 3; id++) {
    sb.expect_recv(0, id, &qp);
    sb.expect_message(0, {0, &qp, 0, IB_WC_RECV, 8});
  }
  for (uint64_t id = 1; id <= 3; id++) {
    sb.check_recv(0, recv_wc(id, &qp), id == 1);
  }
  const auto checks = sb.checks();
  const Check& payload = named(checks, "payload_integrity");
  EXPECT_FALSE(payload.passed);
  EXPECT_EQ(payload.detail, "2 of 3 completions failed it; first: receive wr_id 2: buffer differs from the bytes sent");
  EXPECT_TRUE(named(checks, "every_message_received_once_in_order").passed);
}

// Data that differs on a QP told of a poisoned write is counted, not failed; on another QP
// it still fails.
TEST(Scoreboard, DataAPoisonedWriteLeftIsCountedNotFailed) {
  Scoreboard sb(2);
  ib_qp qp[2];
  sb.expect_poisoned_payload(0);
  for (unsigned q = 0; q < 2; q++)
    for (uint64_t id = 1; id <= 2; id++) {
      sb.expect_recv(q, id, &qp[q]);
      sb.expect_message(q, {0, &qp[q], 0, IB_WC_RECV, 8});
    }
  for (unsigned q = 0; q < 2; q++)
    for (uint64_t id = 1; id <= 2; id++) {
      sb.check_recv(q, recv_wc(id, &qp[q]), id == 1);
    }
  EXPECT_EQ(sb.poisoned_payloads_delivered(), 1u);
  const auto checks = sb.checks();
  const Check& payload = named(checks, "payload_integrity");
  EXPECT_FALSE(payload.passed);
  EXPECT_EQ(payload.detail, "1 of 4 completions failed it; first: receive wr_id 2: buffer differs from the bytes sent");
}

// A wrong immediate on a QP whose CQ lost a CQE half is counted as read stale, not failed.
TEST(Scoreboard, AStaleExtendedHalfIsCountedOnlyWhereACqeHalfWasRefused) {
  Scoreboard sb(2);
  ib_qp qp[2];
  sb.expect_stale_extended(0);
  for (unsigned q = 0; q < 2; q++) {
    sb.expect_recv(q, 1, &qp[q]);
    ExpectedCompletion m{0, &qp[q], 0, IB_WC_RECV, 8};
    m.with_imm = true;
    m.imm_data = 0x1234;
    sb.expect_message(q, m);
    ib_wc wc = recv_wc(1, &qp[q]);
    wc.wc_flags = IB_WC_WITH_IMM;
    wc.ex.imm_data = __builtin_bswap32(0x9999);
    sb.check_recv(q, wc, true);
  }
  EXPECT_EQ(sb.stale_extended_delivered(), 1u);
  const auto checks = sb.checks();
  EXPECT_EQ(named(checks, "expected_byte_len_and_immediate").detail,
            "1 of 2 completions failed it; first: receive wr_id 1: immediate data differs from what was sent");
}

// A stale extended half carries stale valid bits too: a UD receive whose SMAC bit and
// source MAC are both missing is one completion counted; a main-half flag wrong still fails.
TEST(Scoreboard, AStaleExtendedHalfsValidBitsAreCountedOnceAndMainHalfFlagsStillChecked) {
  Scoreboard sb(2);
  ib_qp qp[2];
  for (unsigned q = 0; q < 2; q++) sb.expect_stale_extended(q);
  for (unsigned q = 0; q < 2; q++) {
    sb.expect_recv(q, 1, &qp[q]);
    ExpectedCompletion m{0, &qp[q], 0, IB_WC_RECV, 8};
    m.grh = true;
    m.with_smac = true;
    m.smac = 0x001b21a0c0de;
    sb.expect_message(q, m);
    ib_wc wc = recv_wc(1, &qp[q]);
    // QP 0's extended half is stale (no SMAC bit, no MAC); QP 1's is right, but its
    // completion lost the GRH flag, which the main half carries.
    wc.wc_flags = q ? IB_WC_WITH_NETWORK_HDR_TYPE | IB_WC_WITH_SMAC : IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE;
    wc.network_hdr_type = m.network_hdr_type;
    if (q) wc.smac = {0x00, 0x1b, 0x21, 0xa0, 0xc0, 0xde};
    sb.check_recv(q, wc, true);
  }
  EXPECT_EQ(sb.stale_extended_delivered(), 1u);
  const auto checks = sb.checks();
  EXPECT_EQ(named(checks, "expected_byte_len_and_immediate").detail,
            "1 of 2 completions failed it; first: receive wr_id 1: wc_flags 80, expected 81");
}

// A RoCE UD error completion carries the GRH and network header type flags, as irdma
// reports them whatever the status; an RC one carries none.
TEST(Scoreboard, AUdErrorCompletionCarriesItsGrhFlags) {
  for (const bool ud : {true, false})
    for (const int flags : {0, IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE}) {
      Scoreboard sb(1);
      ib_qp qp;
      qp.qp_type = ud ? IB_QPT_UD : IB_QPT_RC;
      ExpectedCompletion e;
      e.wr_id = 1;
      e.qp = &qp;
      sb.expect_send(0, e);
      ib_wc wc{};
      wc.wr_id = 1;
      wc.status = IB_WC_WR_FLUSH_ERR;
      wc.vendor_err = 0x10000u | 0x1;  // a general flush
      wc.wc_flags = flags;
      wc.qp = &qp;
      sb.expect_peer_fault(0);
      sb.check_send(0, wc);
      const auto checks = sb.checks();
      EXPECT_EQ(named(checks, "expected_byte_len_and_immediate").passed, (flags != 0) == ud) << ud << " " << flags;
    }
}

// Three signaled sends; the error completion `minor` (a flush, major 1) reports the first.
std::vector<Check> first_send_flushed(Scoreboard& sb, const ib_qp& qp, uint16_t minor, ib_wc_status status) {
  for (uint64_t seq = 0; seq < 3; seq++) {
    ExpectedCompletion e;
    e.wr_id = seq + 1;
    e.qp = &qp;
    e.seq = seq;
    sb.expect_send(0, e);
  }
  ib_wc wc{};
  wc.wr_id = 1;
  wc.status = status;
  wc.vendor_err = 0x10000u | minor;
  wc.qp = const_cast<ib_qp*>(&qp);
  sb.check_send(0, wc);
  return sb.checks();
}

// A QP whose own fault is due at its third request fails at its first with that code: the
// scoreboard sees the fault came early.
TEST(Scoreboard, AFaultReportedBeforeItsRequestFails) {
  Scoreboard sb(2);
  ib_qp qp;
  sb.expect_fault(0, 2, 3);
  EXPECT_FALSE(named(first_send_flushed(sb, qp, 3, IB_WC_REM_ACCESS_ERR), "error_completions_as_injected").passed);
}

// Its peer's fault may break a faulted QP first (retries exceeded): no error of its own.
TEST(Scoreboard, APeersFaultMayBreakAFaultedQpFirst) {
  Scoreboard sb(2);
  ib_qp qp;
  sb.expect_fault(0, 2, 3);
  sb.expect_peer_fault(0);
  EXPECT_TRUE(named(first_send_flushed(sb, qp, 8, IB_WC_RETRY_EXC_ERR), "error_completions_as_injected").passed);
}

// A refused WQE fetch may find the SQ empty: what is posted after is flushed in software,
// a general flush first. Its own fault's code is allowed too; another code is not.
TEST(Scoreboard, AFetchFaultAllowsAGeneralFlushFirst) {
  for (const auto& [minor, status, passes] :
       {std::tuple{uint16_t(1), IB_WC_WR_FLUSH_ERR, true}, std::tuple{uint16_t(7), IB_WC_FATAL_ERR, true},
        std::tuple{uint16_t(8), IB_WC_RETRY_EXC_ERR, false}}) {
    Scoreboard sb(2);
    ib_qp qp;
    sb.expect_fetch_fault(0, 0, 7);
    EXPECT_EQ(named(first_send_flushed(sb, qp, minor, status), "error_completions_as_injected").passed, passes)
        << minor;
  }
}

}  // namespace
