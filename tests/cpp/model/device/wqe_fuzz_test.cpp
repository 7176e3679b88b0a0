// The device against garbage WQEs (garbage_wqe.h), 300 rounds from a fixed seed: whatever it
// makes of them, the simulation goes on and every round's rules hold, and the garbage must
// reach the device's error paths, not just sit in the SQ.
#include <gtest/gtest.h>

#include <random>

#include "tests/cpp/driver/irdma/direct_cq.h"
#include "tests/cpp/model/device/garbage_wqe.h"

namespace {

using namespace irdma_sim::testing;

TEST(WqeFuzz, GarbageSqWqesEndInCompletionsOrErrorsNeverACrash) {
  DirectCq fx(config(), 256);
  std::mt19937_64 rng(5);
  GarbageWqeStats stats;
  for (int round = 0; round < 300; round++) {
    SCOPED_TRACE("round " + std::to_string(round));
    garbage_wqe_round(fx.sim, fx.cq, rng, stats, [](const std::string& what) { ADD_FAILURE() << what; });
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(stats.errors, 300u);
  EXPECT_GT(stats.completions, 1000u);
  EXPECT_GT(fx.sim.device().qp_engine().counters().qps_in_error, 200u);
}

}  // namespace
