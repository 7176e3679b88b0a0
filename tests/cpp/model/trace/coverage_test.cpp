// The coverage catalogue and collector: every group's bins addressable, every unreachable
// bin named with a reason and matching bins that exist, hits counted where they are aimed
// and refused where no bin is.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>

#include "model/testbench/coverage_report.h"
#include "model/trace/coverage.h"

namespace {

using namespace irdma_sim;
using trace::Cover;

TEST(Coverage, EveryGroupIsNamedOnceAndEveryUnreachableBinExistsAndSaysWhy) {
  std::set<std::string> names;
  for (const trace::CoverGroup& g : trace::cover_groups()) {
    EXPECT_TRUE(names.insert(g.name).second) << g.name;
    EXPECT_GT(std::string(g.what).size(), 20u) << g.name;
    ASSERT_FALSE(g.axes.empty()) << g.name;
    for (const trace::CoverUnreachable& u : g.unreachable) {
      ASSERT_EQ(u.bin.size(), g.axes.size()) << g.name;
      for (size_t a = 0; a < u.bin.size(); a++)
        EXPECT_LT(u.bin[a], int(g.axes[a].values.size())) << g.name << " axis " << g.axes[a].name;
      EXPECT_GT(std::string(u.why).size(), 20u) << g.name;
      bool matches = false;
      for (size_t b = 0; b < g.bins(); b++) matches |= g.unreachable_because(b) == u.why;
      EXPECT_TRUE(matches) << g.name << ": an unreachable entry names no bin";
    }
    size_t reachable = 0;
    for (size_t b = 0; b < g.bins(); b++) reachable += g.reachable(b);
    EXPECT_GT(reachable, 0u) << g.name;
  }
  EXPECT_EQ(names.size(), trace::kCoverGroups);
}

TEST(Coverage, AHitLandsInTheBinOfItsValuesAndAValuePastItsAxisIsRefused) {
  trace::Coverage cov;
  const trace::CoverGroup& g = trace::cover_group(Cover::cqe_write);  // size x kind x place: 2 x 2 x 3
  cov.hit(Cover::cqe_write, {1, 0, 1});
  cov.hit(Cover::cqe_write, {1, 0, 1});
  size_t hit_bins = 0;
  for (size_t b = 0; b < g.bins(); b++) {
    if (!cov.hits(Cover::cqe_write)[b]) continue;
    hit_bins++;
    EXPECT_EQ(cov.hits(Cover::cqe_write)[b], 2u);
    EXPECT_EQ(g.values_of(b), (std::vector<unsigned>{1, 0, 1}));
  }
  EXPECT_EQ(hit_bins, 1u);
  EXPECT_THROW(cov.hit(Cover::cqe_write, {2, 0, 0}), std::logic_error);
  EXPECT_THROW(cov.hit(Cover::cqe_write, {0, 0}), std::logic_error);
  trace::Coverage other;
  other.hit(Cover::ceq, {0});
  cov.add(other);
  cov.add(other);
  EXPECT_EQ(cov.hits(Cover::ceq)[0], 2u);
}

TEST(Coverage, TheReportCountsReachableBinsOnlyAndLeavesUnobservedDeviceGroupsOut) {
  trace::Coverage cov;
  cov.hit(Cover::ceq, {0});
  cov.hit(Cover::sq_completion, {0, 0, 0});
  const std::string seen = testbench::coverage_json(cov, true);
  const std::string unseen = testbench::coverage_json(cov, false);
  // ceq: 5 events, "dropped" unreachable; one hit of 4 reachable.
  EXPECT_NE(seen.find(R"("name":"ceq")"), std::string::npos);
  EXPECT_NE(seen.find(R"({"bin":["dropped"],"unreachable":)"), std::string::npos);
  EXPECT_NE(seen.find(R"("covered":1,"reachable":4,"percent":25})"), std::string::npos) << seen;
  EXPECT_NE(unseen.find(R"("name":"ceq","description")"), std::string::npos);
  EXPECT_EQ(unseen.find(R"("covered":1,"reachable":4,)"), std::string::npos) << "an unobserved group counted";
  EXPECT_NE(unseen.find(R"("observed":false)"), std::string::npos);
}

}  // namespace
