// RangeAllocator: first fit, alignment, coalescing, exhaustion, and the top of the space.
#include <gtest/gtest.h>

#include "driver/backends/pcie/range_allocator.h"

namespace {

using pcie::RangeAllocator;

TEST(RangeAllocator, FirstFitHonoursAlignment) {
  RangeAllocator space(0x1000, 0x10000);
  EXPECT_EQ(space.allocate(0x10, 1), 0x1000u);
  EXPECT_EQ(space.allocate(0x100, 0x100), 0x1100u) << "skips to the next multiple";
  EXPECT_EQ(space.allocate(0x10, 0x10), 0x1010u) << "the gap the alignment left is used first";
  EXPECT_EQ(space.allocate(0x4000, 0x4000), 0x4000u);
}

TEST(RangeAllocator, ExhaustionIsNothingAndFreesMakeRoomAgain) {
  RangeAllocator space(0, 0x3000);
  auto a = space.allocate(0x1000, 0x1000), b = space.allocate(0x1000, 0x1000), c = space.allocate(0x1000, 0x1000);
  ASSERT_TRUE(a && b && c);
  EXPECT_FALSE(space.allocate(1, 1));
  space.free(*b, 0x1000);
  EXPECT_FALSE(space.allocate(0x1001, 1)) << "one page is free, not more";
  EXPECT_EQ(space.allocate(0x1000, 1), *b);
}

TEST(RangeAllocator, FreedNeighboursMergeIntoOneRange) {
  RangeAllocator space(0, 0x4000);
  uint64_t at[4];
  for (uint64_t& a : at) a = *space.allocate(0x1000, 1);
  // Freed out of order: each free meets a free neighbour on one side or the other.
  space.free(at[1], 0x1000);
  space.free(at[3], 0x1000);
  space.free(at[2], 0x1000);
  space.free(at[0], 0x1000);
  EXPECT_EQ(space.allocate(0x4000, 1), 0u) << "the whole space is one range again";
}

TEST(RangeAllocator, AlignmentNearTheTopOfTheAddressSpaceDoesNotWrap) {
  RangeAllocator space(~0ull - 0xFFF, 0x1000);
  EXPECT_FALSE(space.allocate(0x10, 0x10000));
  EXPECT_EQ(space.allocate(0x10, 0x10), ~0ull - 0xFFF);
}

}  // namespace
