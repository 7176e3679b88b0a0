// The control QP's command flow (spec F.6, H 46): commands from several threads share the
// ring, a full ring backs them up instead of failing, and the device's refusals come back
// as -EIO with the command's effect undone on neither side.
#include <gtest/gtest.h>

#include <vector>

#include "tests/cpp/driver/irdma/direct_cq.h"

namespace {

using namespace irdma_sim::testing;
using namespace ibcore;

TEST(Cqp, AFullRingBacksCommandsUp) {
  DirectCq c;
  constexpr int kThreads = 150;  // more commands at once than the 64-entry ring holds
  std::vector<int> results(kThreads, 1);
  c.host([&] {
    hal::Exec& exec = c.dev.hw().exec;
    int done = 0;
    for (int t = 0; t < kThreads; t++) {
      exec.spawn("cqp_user" + std::to_string(t), 0, [&, t] {
        auto mw = c.dev.alloc_mw();
        results[t] = mw.is_err() ? mw.err() : c.dev.dealloc_mw(mw.get());
        done++;
      });
    }
    while (done < kThreads) exec.delay_ns(1000);
  });
  EXPECT_EQ(results, std::vector<int>(kThreads, 0));
  const auto& cqp = c.sim.device().cqp_engine().counters();
  EXPECT_EQ(cqp.errors, 0u);
  EXPECT_GE(cqp.commands, uint64_t(2 * kThreads));
}

// The device refuses to destroy a CQ QPs still use: the driver reports -EIO and keeps the
// CQ, which goes on working.
TEST(Cqp, ARefusedCommandIsEioAndChangesNothing) {
  DirectCq c;
  int ret = 0;
  c.host([&] { ret = c.dev.destroy_cq(c.cq); });  // the verb, below ib_free_cq's own check
  EXPECT_EQ(ret, -EIO);
  EXPECT_EQ(c.sim.device().cqp_engine().counters().errors, 1u);
  c.send();
  EXPECT_EQ(c.drain(), 2) << "the CQ still works";
}

// H 46: a device that no longer answers (its CQP handed back) makes a command time out
// after the driver's 5 s without progress.
TEST(Cqp, ACommandTheDeviceNeverCompletesTimesOut) {
  SimConfig cfg = config();
  cfg.host.relax_timeout_ns = 1'000'000;  // a spinning CPU wakes each millisecond
  DirectCq c(cfg);
  int ret = 0;
  uint64_t waited_ns = 0;
  c.host([&] {
    c.dev.hw().bar0.write32(irdma::IRDMA_CCQPHIGH, 0);
    c.dev.hw().bar0.write32(irdma::IRDMA_CCQPLOW, 0);  // the device stops its CQP
    const uint64_t t0 = c.dev.hw().exec.now_ns();
    auto mw = c.dev.alloc_mw();
    ret = mw.is_err() ? mw.err() : 0;
    waited_ns = c.dev.hw().exec.now_ns() - t0;
  });
  EXPECT_EQ(ret, -ETIMEDOUT);
  EXPECT_GE(waited_ns, 5'000'000'000u);
}

// A device that answers reads with all ones is gone: a command fails with ENODEV after the
// first presence check, not after the 5 s timeout, and the device is given up with it (its
// QPs' work flushes in software, as after a timeout).
TEST(Cqp, ACommandToADeviceThatIsGoneFailsWithEnodevAtOnce) {
  DirectCq c;
  int ret = 0;
  uint64_t waited_ns = 0;
  c.host([&] {
    // Memory decoding off: the function claims no BAR access, reads come back all ones.
    c.dev.hw().config.write(hal::PCI_COMMAND, 2, hal::PCI_COMMAND_MASTER);
    const uint64_t t0 = c.dev.hw().exec.now_ns();
    auto mw = c.dev.alloc_mw();
    ret = mw.is_err() ? mw.err() : 0;
    waited_ns = c.dev.hw().exec.now_ns() - t0;
  });
  EXPECT_EQ(ret, -ENODEV);
  EXPECT_LT(waited_ns, 2 * irdma::irdma_cqp::kPresenceCheckNs);
  EXPECT_EQ(c.dev.event_counters().resets_requested, 1u);
}

}  // namespace
