// ReadySet against std::set on random inserts and takes, across word and summary bounds.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "model/testbench/workload/ready_set.h"

namespace {

using irdma_sim::testbench::ReadySet;

TEST(ReadySet, TakesMembersInOrderFromAnyPointAsASortedSetWould) {
  for (const unsigned size : {1u, 63u, 64u, 65u, 4095u, 4096u, 4097u, 20000u}) {
    ReadySet set(size);
    std::set<unsigned> model;
    std::mt19937 rng(size);
    for (int step = 0; step < 20000; ++step) {
      if (rng() % 3) {
        const unsigned i = rng() % size;
        set.insert(i);
        model.insert(i);
      } else {
        const unsigned from = rng() % (size + 2);  // past the end too
        const auto it = model.lower_bound(from);
        const unsigned want = it == model.end() ? ReadySet::kNone : *it;
        if (it != model.end()) model.erase(it);
        ASSERT_EQ(set.take_from(from), want) << "size " << size << " step " << step << " from " << from;
      }
    }
    for (unsigned want : model) ASSERT_EQ(set.take_from(0), want);
    EXPECT_EQ(set.take_from(0), ReadySet::kNone);
  }
}

TEST(ReadySet, InsertingAMemberTwiceKeepsOne) {
  ReadySet set(100);
  set.insert(70);
  set.insert(70);
  EXPECT_EQ(set.take_from(0), 70u);
  EXPECT_EQ(set.take_from(0), ReadySet::kNone);
}

}  // namespace
