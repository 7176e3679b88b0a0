// One round of garbage SQ WQEs, as a buggy driver would write them, shared by the unit test
// (WqeFuzz, std::mt19937_64) and the libFuzzer target (fuzz_wqe, the input's bytes): a fresh
// loopback RC pair on `cq`, a SEND that must succeed (the device is not wedged by what came
// before), then random qwords behind a valid bit straight into the SQ, half of them with a
// real opcode and a consistent fragment count so that they reach fragment parsing, remote
// keys and DMA at random addresses (and at times the second receive garbled too), never
// through the global key. Whatever the device makes of it, the simulation must go on,
// every completion must name one of the pair's work requests once, and both QPs must be
// destroyable; a broken rule goes to `fail`.
#pragma once

#include <functional>
#include <iterator>
#include <memory>
#include <set>
#include <string>

#include "driver/core/cq.h"
#include "driver/irdma/defs.h"
#include "driver/irdma/uk.h"
#include "model/testbench/buffered_qp.h"
#include "model/system/simulation.h"

namespace irdma_sim::testing {

struct GarbageWqeStats {
  uint64_t completions = 0;
  uint64_t errors = 0;  // completions with an error status
};

// The global key (STag 0) reaches all of host memory unchecked, as a kernel ULP's unsafe
// global rkey does: garbage that used it could write over anything, the driver's rings and
// the next round's QP among them, and no rule about later rounds would hold. So the STag
// (bits 31:0) of every fragment slot, and the SQ header's remote STag, never stay 0.
constexpr uint64_t kStagBits = 0xFFFFFFFFull;
inline void keep_off_the_global_key(uint64_t* wqe, uint32_t qwords) {
  for (uint32_t q = 1; q < qwords; q += q == 1 ? 4 : 2)  // slot 0's qword 1, then 5, 7, ...
    if (!(wqe[q] & kStagBits)) wqe[q] |= 1;
}

template <class Rng>
void garbage_wqe_round(system::Simulation& sim, ibcore::ib_cq* cq, Rng& rng, GarbageWqeStats& stats,
                       const std::function<void(const std::string&)>& fail) {
  using namespace ibcore;
  using testbench::BufferedQp;
  static constexpr uint8_t kOps[] = {
      irdma::IRDMA_OP_TYPE_RDMA_WRITE, irdma::IRDMA_OP_TYPE_RDMA_READ, irdma::IRDMA_OP_TYPE_SEND,
      irdma::IRDMA_OP_TYPE_SEND_INV,   irdma::IRDMA_OP_TYPE_BIND_MW,   irdma::IRDMA_OP_TYPE_FAST_REG_NSMR,
      irdma::IRDMA_OP_TYPE_INV_STAG,   irdma::IRDMA_OP_TYPE_RDMA_READ_INV_STAG, irdma::IRDMA_OP_TYPE_NOP};
  const auto pick = [&](uint64_t n) { return rng() % n; };
  irdma::irdma_device& dev = sim.driver();
  const auto wait_ns = [&](uint64_t ns) { sim.run_on_host([&] { dev.hw().exec.delay_ns(ns); }); };
  std::unique_ptr<BufferedQp> x, y;
  bool ready = false;
  sim.run_on_host([&] {
    int err = 0;
    x.reset(BufferedQp::create(dev, cq, 8, 8, 64, err));
    y.reset(err ? nullptr : BufferedQp::create(dev, cq, 8, 8, 64, err));
    if (err || dev.connect_qp(x->qp(), y->qp_num()) || dev.connect_qp(y->qp(), x->qp_num()))
      return fail("a fresh QP pair could not be set up");
    for (uint32_t slot = 0; slot < 2; slot++) {
      const ib_sge sge = y->recv_sge(slot);
      ib_recv_wr wr;
      wr.wr_id = 100 + slot;
      wr.sg_list = &sge;
      wr.num_sge = 1;
      if (dev.post_recv(y->qp(), &wr, nullptr)) return fail("posting a receive failed");
    }
    if (pick(2)) {  // the second receive garbled too, its valid bit kept
      irdma::irdma_qp_uk& ruk = y->qp()->qp_uk;
      uint64_t* rwqe = ruk.rq_base + (uint64_t(4) << ruk.rq_shift);
      for (uint32_t q = 0; q < (4u << ruk.rq_shift); q++)
        if (q != 3) rwqe[q] = rng();
      rwqe[3] = (rng() & ~irdma::IRDMAQPSQ_VALID) | (rwqe[3] & irdma::IRDMAQPSQ_VALID);
      keep_off_the_global_key(rwqe, 4u << ruk.rq_shift);
    }
    const ib_sge sge = x->send_sge(0, 16);
    ib_send_wr wr;
    wr.wr_id = 1;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = IB_SEND_SIGNALED;
    if (dev.post_send(x->qp(), &wr, nullptr)) return fail("posting the valid SEND failed");
    ready = true;
  });
  if (!ready) return;
  wait_ns(20000);
  std::set<uint64_t> outstanding = {1, 100, 101};
  std::set<uint64_t> healthy = {1, 100};  // the SEND and the receive it lands in

  // The garbage, straight into x's SQ behind the driver's back.
  sim.run_on_host([&] {
    irdma::irdma_qp_uk& uk = x->qp()->qp_uk;
    for (uint64_t n = 0, count = 1 + pick(3); n < count; n++) {
      const uint32_t quanta = uint32_t(1 + pick(4));
      const int64_t idx = irdma::irdma_qp_get_next_send_wqe(&uk, quanta);
      if (idx < 0) break;
      uint64_t* wqe = uk.sq_base + 4 * idx;
      for (uint32_t q = 0; q < 4 * quanta; q++) wqe[q] = rng();
      uint64_t hdr = rng();
      if (pick(2)) {  // structured: a real opcode, a fragment count that fits the quanta
        const uint8_t op = kOps[pick(std::size(kOps))];
        hdr = (hdr & ~(0x3Full << 32) & ~(0xFull << 38)) | uint64_t(op) << 32 | uint64_t(2 * (quanta - 1)) << 38;
        if (pick(2)) wqe[0] = x->send_sge(1, 16).addr;  // a real buffer now and then
      }
      hdr = (hdr & ~irdma::IRDMAQPSQ_VALID) | (uint64_t(uk.swqe_polarity) << 63);
      if (!(hdr & kStagBits)) hdr |= 1;
      keep_off_the_global_key(wqe, 4 * quanta);
      const uint64_t wr_id = 1000 + n;
      irdma::irdma_qp_publish_send_wqe(&uk, uint32_t(idx), {wr_id, 0, uint16_t(quanta), uint8_t((hdr >> 32) & 0x3F)});
      outstanding.insert(wr_id);
      hal::dma_wmb();
      irdma::WRITE_ONCE(wqe[3], hdr);
    }
    irdma::irdma_uk_qp_post_wr(&uk);
  });
  wait_ns(200000);

  sim.run_on_host([&] {
    ib_wc wc[16];
    for (int got; (got = ib_poll_cq(cq, 16, wc)) > 0;) {
      for (int i = 0; i < got; i++) {
        if (wc[i].qp != x->qp() && wc[i].qp != y->qp()) fail("a completion for a QP of another round");
        if (!outstanding.erase(wc[i].wr_id)) fail("wr_id " + std::to_string(wc[i].wr_id) + " unknown or twice");
        if (wc[i].status > IB_WC_GENERAL_ERR) fail("status " + std::to_string(wc[i].status) + " out of range");
        if (healthy.erase(wc[i].wr_id) && wc[i].status != IB_WC_SUCCESS)
          fail("the valid SEND of a fresh pair, or its receive, failed: wr_id " + std::to_string(wc[i].wr_id) +
               ", status " + std::to_string(wc[i].status) + ", vendor_err " + std::to_string(wc[i].vendor_err) +
               ", opcode " + std::to_string(wc[i].opcode) +
               (wc[i].qp ? ", QP " + std::to_string(wc[i].qp->qp_num) : std::string(", no QP")));
        stats.completions++;
        stats.errors += wc[i].status != IB_WC_SUCCESS;
      }
    }
    if (!healthy.empty()) fail("the valid SEND did not complete on both sides");
    if (x->destroy()) fail("destroying the QP of the garbage failed");
    if (y->destroy()) fail("destroying its peer failed");
  });
}

}  // namespace irdma_sim::testing
