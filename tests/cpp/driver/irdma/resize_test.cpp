// Resizing a CQ (spec G.2, G.4, D.6, D.7, H 37-40): the retired ring is drained before the
// new one, SW_CQ_SELECT counts what was freed, back-to-back resizes, shrinking below what is
// unpolled, ibcq->cqe conventions, refusals.
#include <gtest/gtest.h>

#include <vector>

#include "driver/core/cq_pool.h"
#include "tests/cpp/driver/irdma/direct_cq.h"

namespace {

using namespace irdma_sim::testing;
using namespace ibcore;

uint64_t sw_cq_select(const irdma::irdma_cq* cq) {
  return static_cast<const uint64_t*>(cq->shadow.cpu)[4] & 0x3FFF;
}

std::vector<uint64_t> poll_ids(DirectCq& c, int n) {
  std::vector<uint64_t> ids;
  c.host([&] {
    ib_wc wc[32];
    const int got = ib_poll_cq(c.cq, n, wc);
    for (int i = 0; i < got; i++) {
      EXPECT_EQ(wc[i].status, IB_WC_SUCCESS);
      ids.push_back(wc[i].wr_id);
    }
  });
  return ids;
}

int resize(DirectCq& c, int cqe) {
  int ret = 0;
  c.host([&] { ret = ib_resize_cq(c.cq, cqe); });
  return ret;
}

TEST(Resize, TheRetiredRingIsDrainedFirst) {
  DirectCq c;
  EXPECT_EQ(c.cq->cqe, 64) << "after create: the request (H 40)";
  c.send();
  c.send();  // four CQEs in the first ring
  ASSERT_EQ(resize(c, 100), 0);
  EXPECT_EQ(c.cq->cqe, 201) << "after resize: the ring's size - 1, (100 + 1) x 2 - 1";
  EXPECT_EQ(c.cq->sc_cq.cq_ring.head, 0u);
  EXPECT_EQ(c.cq->sc_cq.polarity, 1) << "a new ring starts at 0 with polarity 1 (H 39)";
  c.send();  // two in the new one
  EXPECT_EQ(poll_ids(c, 16), (std::vector<uint64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(c.cq->resize_list.empty());
  EXPECT_EQ(sw_cq_select(c.cq), 1u);
  EXPECT_EQ(c.sim.device().cq_engine().counters().resizes, 1u);
}

// H 37, 38: two retired rings. A poll that stops inside the second frees only the first
// (the last one that yielded stays); the next poll reaches the current ring and frees all.
TEST(Resize, BackToBackResizesRetireInOrder) {
  DirectCq c;
  c.send();
  ASSERT_EQ(resize(c, 40), 0);
  c.send();
  ASSERT_EQ(resize(c, 80), 0);
  c.send();
  ASSERT_EQ(c.cq->resize_list.size(), 2u);
  EXPECT_EQ(poll_ids(c, 3), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(c.cq->resize_list.size(), 1u);
  EXPECT_EQ(sw_cq_select(c.cq), 1u);
  EXPECT_EQ(poll_ids(c, 16), (std::vector<uint64_t>{4, 5, 6}));
  EXPECT_TRUE(c.cq->resize_list.empty());
  EXPECT_EQ(sw_cq_select(c.cq), 2u);
}

// Shrinking below what is unpolled keeps it: it stays in the retired ring (irdma's way).
TEST(Resize, ShrinkingBelowTheUnpolledKeepsThem) {
  DirectCq c;
  for (int i = 0; i < 4; i++) c.send();  // eight CQEs
  ASSERT_EQ(resize(c, 2), 0);            // a ring of six
  c.send();
  EXPECT_EQ(poll_ids(c, 32), (std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
}

// Until SW_CQ_SELECT shows the retired rings drained, shadow qword0 may hold an old ring's
// head: an arm then fires at once rather than risk missing what the retired ring holds.
TEST(Resize, AnArmBeforeTheRetiredRingsAreDrainedFires) {
  DirectCq c;
  c.send();  // two CQEs, unpolled
  ASSERT_EQ(resize(c, 40), 0);
  EXPECT_EQ(c.notify(IB_CQ_NEXT_COMP), 0) << "the current ring is empty: nothing missed there";
  c.wait_ns(5000);
  EXPECT_EQ(c.handled, 1);
  EXPECT_EQ(c.drain(), 2);
}

TEST(Resize, RefusalsAsLinuxReturnsThem) {
  DirectCq c;
  EXPECT_EQ(resize(c, 0), -EINVAL);
  EXPECT_EQ(resize(c, c.dev.attrs.max_cqe + 1), -EINVAL);
  ErrPtr<ib_cq> pool = ErrPtr<ib_cq>::error(-EINVAL);
  int ret = 0;
  c.host([&] {
    pool = ib_cq_pool_get(&c.dev, 16, 0, IB_POLL_SOFTIRQ);
    ASSERT_FALSE(pool.is_err());
    ret = ib_resize_cq(pool.get(), 100);
    ib_cq_pool_put(pool.get(), 16);
  });
  EXPECT_EQ(ret, -EOPNOTSUPP) << "a shared CQ";
}

TEST(Resize, WithoutTheFeatureItIsNotSupported) {
  SimConfig cfg = config();
  cfg.device.cq_resize = false;
  DirectCq c(cfg);
  EXPECT_EQ(resize(c, 100), -EOPNOTSUPP);
}

// A QP destroyed with CQEs in a retired ring: they are cleaned there too, never reported.
TEST(Resize, DestroyingAQpCleansTheRetiredRings) {
  DirectCq c;
  c.send();
  ASSERT_EQ(resize(c, 40), 0);
  c.host([&] {
    ASSERT_EQ(c.a->destroy(), 0);
    ASSERT_EQ(c.b->destroy(), 0);
  });
  c.a.reset();
  c.b.reset();
  EXPECT_EQ(c.drain(), 0);
  EXPECT_EQ(c.cq->sc_cq.corrupt_cqes, 0u) << "skipped as a destroyed QP's, not as corrupt";
  EXPECT_TRUE(c.cq->resize_list.empty()) << "drained: freed, though the current ring yielded nothing";
  EXPECT_EQ(sw_cq_select(c.cq), 1u);
}

}  // namespace
