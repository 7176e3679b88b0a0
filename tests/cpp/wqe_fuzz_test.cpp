// The device against garbage WQEs, as a buggy driver would write them: random qwords
// behind a valid bit, half of them with a real opcode and a consistent fragment count so
// that they reach fragment parsing, remote keys and DMA at random addresses. Every round
// starts on a fresh QP pair with a SEND that must succeed (the device is not wedged by
// what came before), then posts the garbage (and at times garbles its second receive). Whatever the device makes of it, the
// simulation must go on, every completion must name one of the pair's work requests once,
// and both QPs must be destroyable.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "direct_cq.h"
#include "driver/irdma/defs.h"
#include "driver/irdma/uk.h"

namespace {

using namespace irdma_sim::testing;

TEST(WqeFuzz, GarbageSqWqesEndInCompletionsOrErrorsNeverACrash) {
  DirectCq fx(config(), 256);
  std::mt19937_64 rng(5);
  const auto pick = [&](uint64_t n) { return rng() % n; };
  static constexpr uint8_t kOps[] = {
      irdma::IRDMA_OP_TYPE_RDMA_WRITE, irdma::IRDMA_OP_TYPE_RDMA_READ, irdma::IRDMA_OP_TYPE_SEND,
      irdma::IRDMA_OP_TYPE_SEND_INV,   irdma::IRDMA_OP_TYPE_BIND_MW,   irdma::IRDMA_OP_TYPE_FAST_REG_NSMR,
      irdma::IRDMA_OP_TYPE_INV_STAG,   irdma::IRDMA_OP_TYPE_RDMA_READ_INV_STAG, irdma::IRDMA_OP_TYPE_NOP};
  uint64_t completions = 0, errors = 0;
  for (int round = 0; round < 300; round++) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::unique_ptr<BufferedQp> x, y;
    fx.host([&] {
      int err = 0;
      x.reset(BufferedQp::create(fx.dev, fx.cq, 8, 8, 64, err));
      y.reset(BufferedQp::create(fx.dev, fx.cq, 8, 8, 64, err));
      ASSERT_EQ(err, 0);
      ASSERT_EQ(fx.dev.connect_qp(x->qp(), y->qp_num()), 0);
      ASSERT_EQ(fx.dev.connect_qp(y->qp(), x->qp_num()), 0);
      for (uint32_t slot = 0; slot < 2; slot++) {
        const ib_sge sge = y->recv_sge(slot);
        ib_recv_wr wr;
        wr.wr_id = 100 + slot;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        ASSERT_EQ(fx.dev.post_recv(y->qp(), &wr, nullptr), 0);
      }
      if (pick(2)) {  // the second receive garbled too, its valid bit kept
        irdma::irdma_qp_uk& ruk = y->qp()->qp_uk;
        uint64_t* rwqe = ruk.rq_base + (uint64_t(4) << ruk.rq_shift);
        for (uint32_t q = 0; q < (4u << ruk.rq_shift); q++)
          if (q != 3) rwqe[q] = rng();
        rwqe[3] = (rng() & ~irdma::IRDMAQPSQ_VALID) | (rwqe[3] & irdma::IRDMAQPSQ_VALID);
      }
      const ib_sge sge = x->send_sge(0, 16);
      ib_send_wr wr;
      wr.wr_id = 1;
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.send_flags = IB_SEND_SIGNALED;
      ASSERT_EQ(fx.dev.post_send(x->qp(), &wr, nullptr), 0);
    });
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    fx.wait_ns(20000);
    std::set<uint64_t> outstanding = {1, 100, 101};
    std::set<uint64_t> healthy = {1, 100};  // the SEND and the receive it lands in

    // The garbage, straight into x's SQ behind the driver's back.
    fx.host([&] {
      irdma::irdma_qp_uk& uk = x->qp()->qp_uk;
      for (uint64_t n = 0, count = 1 + pick(3); n < count; n++) {
        const uint32_t quanta = uint32_t(1 + pick(4));
        const int64_t idx = irdma::irdma_qp_get_next_send_wqe(&uk, quanta);
        if (idx < 0) break;
        uint64_t* wqe = uk.sq_base + 4 * idx;
        for (uint32_t q = 0; q < 4 * quanta; q++) wqe[q] = rng();
        uint64_t hdr = rng();
        const bool structured = pick(2);
        if (structured) {
          const uint8_t op = kOps[pick(std::size(kOps))];
          hdr = (hdr & ~(0x3Full << 32) & ~(0xFull << 38)) | uint64_t(op) << 32 |
                uint64_t(2 * (quanta - 1)) << 38;
          if (pick(2)) wqe[0] = x->send_sge(1, 16).addr;  // a real buffer now and then
        }
        hdr = (hdr & ~irdma::IRDMAQPSQ_VALID) | (uint64_t(uk.swqe_polarity) << 63);
        const uint64_t wr_id = 1000 + n;
        uk.sq_wrtrk_array[idx] = {wr_id, 0, uint16_t(quanta), uint8_t((hdr >> 32) & 0x3F)};
        outstanding.insert(wr_id);
        hal::dma_wmb();
        irdma::WRITE_ONCE(wqe[3], hdr);
      }
      irdma::irdma_uk_qp_post_wr(&uk);
    });
    fx.wait_ns(200000);

    fx.host([&] {
      ib_wc wc[16];
      for (int got; (got = ib_poll_cq(fx.cq, 16, wc)) > 0;) {
        for (int i = 0; i < got; i++) {
          const bool ours = wc[i].qp == x->qp() || wc[i].qp == y->qp();
          EXPECT_TRUE(ours) << "a completion for a QP of another round";
          EXPECT_TRUE(outstanding.erase(wc[i].wr_id)) << "wr_id " << wc[i].wr_id << " unknown or twice";
          EXPECT_LE(wc[i].status, IB_WC_GENERAL_ERR);
          if (healthy.erase(wc[i].wr_id)) {
            EXPECT_EQ(wc[i].status, IB_WC_SUCCESS) << "the valid SEND of a fresh pair";
          }
          completions++;
          errors += wc[i].status != IB_WC_SUCCESS;
        }
      }
      EXPECT_TRUE(healthy.empty()) << "the valid SEND did not complete on both sides";
      EXPECT_EQ(x->destroy(), 0);
      EXPECT_EQ(y->destroy(), 0);
    });
    if (::testing::Test::HasFailure()) return;
  }
  // The garbage must have reached the device's error paths, not just sat in the SQ.
  EXPECT_GT(errors, 300u);
  EXPECT_GT(completions, 1000u);
  EXPECT_GT(fx.sim.device().qp_engine().counters().qps_in_error, 200u);
}

}  // namespace
