// The poll path against hostile rings (hostile_ring.h), 10 000 seeds of four rounds each.
// The asan preset runs this; tests/fuzz/fuzz_poll_ring.cpp drives the same ring from
// libFuzzer's bytes.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "tests/cpp/driver/irdma/hostile_ring.h"

namespace {

using irdma_sim::testing::HostileRing;

TEST(CqFuzz, HostileRingsNeverCrashAndReportOnlyOutstandingWorkOnceInOrder) {
  std::map<uint32_t, uint64_t> by_status;
  for (uint64_t seed = 1; seed <= 10000; seed++) {
    HostileRing ring(std::mt19937_64(seed), [seed](const std::string& what) { ADD_FAILURE() << "seed " << seed << ": " << what; });
    std::mt19937 rounds{uint32_t(seed)};
    for (int round = 0; round < 4; round++) {
      ring.produce(1 + rounds() % 40);  // may lap the consumer: the ring is garbage anyway
      ASSERT_TRUE(ring.drain()) << "seed " << seed << ": the poll loop does not terminate";
      if (::testing::Test::HasFailure()) FAIL() << "seed " << seed;
    }
    for (const auto& [status, n] : ring.by_status) by_status[status] += n;
  }
  // A fuzz that reports nothing tests nothing: successes, flushes (the GEN_2 expansion
  // included) and other errors must all have come out.
  EXPECT_GT(by_status[ibcore::IB_WC_SUCCESS], 20000u);
  EXPECT_GT(by_status[ibcore::IB_WC_WR_FLUSH_ERR], 5000u);
  EXPECT_GT(by_status[ibcore::IB_WC_GENERAL_ERR], 5000u);
  EXPECT_GT(by_status.size(), 8u) << "flush codes map to several statuses";
}

}  // namespace
