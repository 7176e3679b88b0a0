// The harness every Verilated block shares: its stall watchdog, and the cycles it counts.
#include <verilated.h>

#include "Vcqe_formatter.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "rtl_bridge/verilated_block.h"

namespace irdma_sim::rtl {
namespace {

using Block = VerilatedBlock<Vcqe_formatter>;

TEST(VerilatedBlock, AStallWhileTheConsumerWaitsThrowsAndAStalledConsumerDoesNot) {
  Block block("test block");
  block.reset([](Vcqe_formatter& t) {
    t.in_valid = 0;
    t.out_ready = 0;
  });
  // A consumer that holds ready low may wait forever: that is no stall of the block's.
  for (unsigned i = 0; i < 10 * Block::kStallLimitCycles; i++) block.watch(false, false);
  // Progress resets the count.
  for (unsigned i = 0; i < Block::kStallLimitCycles; i++) block.watch(false, true);
  block.watch(true, true);
  for (unsigned i = 0; i < Block::kStallLimitCycles; i++) block.watch(false, true);
  try {
    block.watch(false, true);
    FAIL() << "no exception after " << Block::kStallLimitCycles + 1 << " stalled cycles";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "test block: made no progress for 65 cycles");
  }
}

TEST(VerilatedBlock, ResetIsNoCycleAndEveryTickIsOne) {
  Block block("test block");
  block.reset([](Vcqe_formatter& t) {
    t.in_valid = 0;
    t.out_ready = 1;
  });
  EXPECT_EQ(block.cycles(), 0u);
  EXPECT_TRUE(block.top().in_ready) << "out of reset, the formatter takes a request";
  for (int i = 0; i < 5; i++) block.tick();
  EXPECT_EQ(block.cycles(), 5u);
  EXPECT_FALSE(block.top().out_valid);
  EXPECT_THROW(block.enable_vcd("/proc/no/such.vcd", 1000), std::runtime_error);
}

}  // namespace
}  // namespace irdma_sim::rtl
