// irdma_create_cq's sizing and refusals (spec G.1, H 19, 47), pyverbs-style: the ring for a
// request, ibcq->cqe, the shadow read threshold the device is given, bad sizes, flags and
// vectors.
#include <gtest/gtest.h>

#include "tests/cpp/driver/irdma/direct_cq.h"

namespace {

using namespace irdma_sim::testing;
using namespace ibcore;

struct Made {
  int err = 0;
  irdma::irdma_cq* cq = nullptr;
};

Made create(DirectCq& c, unsigned cqe, unsigned vector = 0, uint32_t flags = 0) {
  Made m;
  c.host([&] {
    ib_cq_init_attr attr;
    attr.cqe = cqe;
    attr.comp_vector = vector;
    attr.flags = flags;
    m.cq = static_cast<irdma::irdma_cq*>(c.dev.create_cq(attr, m.err));
  });
  return m;
}

void destroy(DirectCq& c, const Made& m) {
  c.host([&] { EXPECT_EQ(c.dev.destroy_cq(m.cq), 0); });
}

TEST(CreateCq, Gen2RingsAreTwiceTheRequestPlusOne) {
  DirectCq c;
  struct Row {
    unsigned cqe;
    uint32_t ring;
    int reported;
  };
  for (const Row r : {Row{1, 4, 4}, Row{3, 8, 4}, Row{64, 130, 64}, Row{4096, 8194, 4096}}) {
    const Made m = create(c, r.cqe);
    ASSERT_EQ(m.err, 0) << r.cqe;
    EXPECT_EQ(m.cq->sc_cq.cq_size, r.ring) << r.cqe;
    EXPECT_EQ(m.cq->cqe, r.reported) << "the request, floored at 4";
    const auto* ctx = c.sim.device().cq_engine().find(m.cq->cq_num);
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(ctx->size, r.ring);
    EXPECT_EQ(ctx->shadow_read_threshold, r.ring / 2);
    EXPECT_TRUE(ctx->check_overflow);
    destroy(c, m);
  }
}

TEST(CreateCq, SixtyFourByteRingsAreNotDoubledAndAreEven) {
  SimConfig cfg = config();
  cfg.device.generation = 3;
  cfg.device.cqe_64byte = true;
  DirectCq c(cfg);
  for (const auto& [cqe, ring] : {std::pair{4096u, 4098u}, std::pair{5u, 6u}, std::pair{6u, 8u}}) {
    const Made m = create(c, cqe);
    ASSERT_EQ(m.err, 0);
    EXPECT_EQ(m.cq->sc_cq.cq_size, ring) << cqe;
    EXPECT_EQ(c.sim.device().cq_engine().find(m.cq->cq_num)->cqe_64byte, true);
    destroy(c, m);
  }
}

TEST(CreateCq, BadRequestsAreRefusedAsLinuxRefusesThem) {
  DirectCq c;
  EXPECT_EQ(create(c, 0).err, -EINVAL);
  EXPECT_EQ(create(c, irdma::IRDMA_MAX_CQ_SIZE + 1).err, -EINVAL);
  EXPECT_EQ(create(c, 16, 0, 0x2).err, -EOPNOTSUPP) << "an unknown flag";
  const Made stamped = create(c, 16, 0, 1);  // IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION
  EXPECT_EQ(stamped.err, 0);
  destroy(c, stamped);
  const Made far = create(c, 16, 7);  // beyond the CEQs: CEQ 0, silently (H 47)
  ASSERT_EQ(far.err, 0);
  EXPECT_EQ(far.cq->ceq_id, 0u);
  destroy(c, far);
}

// H 19: on GEN_2 the largest request makes a ring above what CQSIZE holds; this device
// refuses the command, and the driver gives everything back.
TEST(CreateCq, TheLargestGen2RequestOverflowsTheSizeField) {
  DirectCq c;
  const Made m = create(c, irdma::IRDMA_MAX_CQ_SIZE);
  EXPECT_EQ(m.err, -EIO);
  EXPECT_EQ(m.cq, nullptr);
  EXPECT_EQ(c.sim.device().cqp_engine().counters().errors, 1u);
  const Made next = create(c, 16);
  EXPECT_EQ(next.err, 0) << "the id and memory came back";
  destroy(c, next);
}

}  // namespace
