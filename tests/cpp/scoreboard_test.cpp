// The scoreboard's verdicts, fed by hand: what a failed check says.
#include <gtest/gtest.h>

#include <algorithm>

#include "driver/core/ib_qp.h"
#include "model/system/scoreboard.h"

namespace {

using namespace irdma_sim::system;
using namespace ibcore;

const Check& named(const std::vector<Check>& checks, const std::string& name) {
  auto it = std::find_if(checks.begin(), checks.end(), [&](const Check& c) { return c.name == name; });
  EXPECT_NE(it, checks.end()) << name;
  return *it;
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
    ib_wc wc{};
    wc.wr_id = id;
    wc.opcode = IB_WC_RECV;
    wc.byte_len = 8;
    wc.qp = &qp;
    sb.check_recv(0, wc, id == 1);
  }
  const auto checks = sb.checks();
  const Check& payload = named(checks, "payload_integrity");
  EXPECT_FALSE(payload.passed);
  EXPECT_EQ(payload.detail, "2 of 3 completions failed it; first: receive wr_id 2: buffer differs from the bytes sent");
  EXPECT_TRUE(named(checks, "every_message_received_once_in_order").passed);
}

}  // namespace
