// A CQ ring of hostile content for the driver's poll path (irdma_poll_ring: CQE reader and
// process_cqe): well-formed CQEs with random fields, CQEs naming wrong QPs and indices, flush
// CQEs, extended halves that are and are not there, and raw random qwords that merely carry
// the right valid bit. Whatever the ring holds, the driver must not crash or read out of
// bounds, must terminate, and every ib_wc it reports must name a live QP and a work request
// that was outstanding on it, each once and in posting order.
//
// `Entropy` (uint64_t operator()) draws every choice: a seeded generator in the unit test, the
// fuzzer's bytes in the libFuzzer target. `Fail` (void(const std::string&)) is told of each
// broken rule.
#pragma once

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "driver/irdma/irdma_device.h"
#include "driver/irdma/poll.h"
#include "driver/irdma/uk.h"
#include "model/device/cqe_format.h"

namespace irdma_sim::testing {

using namespace irdma;
using ibcore::ib_wc;
using device::CqeFields;
using device::TlmCqeFormatter;

constexpr uint64_t kValid = 1ull << 63;

struct Qp {
  irdma_qp_uk uk;
  int verbs_qp;  // stands in for the ib_qp: only its address is reported
  std::vector<uint64_t> sq_posted, rq_posted;  // wr_ids in posting order
};

template <typename Entropy, typename Fail>
class HostileRing {
 public:
  HostileRing(Entropy entropy, Fail fail) : rng_(std::move(entropy)), fail_(std::move(fail)) {
    const irdma_vers gen = coin(2) ? IRDMA_GEN_3 : IRDMA_GEN_2;
    const bool wide = coin(2);
    const uint32_t size = 2 + pick(300);
    mem_.assign(size_t(size) * (wide ? 8 : 4), 0);
    irdma_uk_cq_init(&cq_, mem_.data(), shadow_, 7, size, wide);
    cq_.hw_rev = gen;
    qps_.resize(1 + pick(3));
    table_.assign(16, nullptr);
    for (size_t i = 0; i < qps_.size(); i++) {
      Qp& q = qps_[i];
      const uint32_t id = uint32_t(2 + 3 * i);
      require(irdma_uk_qp_init(&q.uk, id, 4 + pick(60), 2 + pick(60), 1 + pick(3), 1 + pick(2)) == 0,
              "irdma_uk_qp_init failed");
      q.uk.hw_rev = gen;
      q.uk.qp_type = coin(3) ? IRDMA_QP_TYPE_ROCE_RC : IRDMA_QP_TYPE_ROCE_UD;
      q.uk.compl_ctx = (uint64_t(1 + pick(7)) << 32) | id;
      q.uk.back_qp = &q.verbs_qp;
      table_[id] = &q.uk;
      post_sends(q, pick(40));
      post_recvs(q, pick(40));
    }
    cq_.qp_table = {table_.data(), uint32_t(table_.size())};
  }

  // Writes `n` entries at the producer index, each one of the hostile kinds.
  void produce(uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
      switch (pick(4)) {
        case 0: write_raw(); break;
        case 1: write_cqe(random_fields()); break;
        default: write_cqe(plausible_fields()); break;
      }
    }
  }

  // Polls until the driver makes no more progress, checking every ib_wc; false if it
  // never stops.
  bool drain() {
    // Each step consumes a ring slot or an outstanding work request.
    size_t bound = 4 + produced_;
    for (const Qp& q : qps_) bound += q.sq_posted.size() + q.rq_posted.size();
    for (size_t step = 0; step < bound; step++) {
      const uint32_t head = cq_.cq_ring.head;
      ib_wc wc[4];
      std::memset(wc, 0xA5, sizeof wc);  // what the driver leaves unset must not look valid
      const int n = irdma_poll_ring(&cq_, 1 + int(pick(4)), wc);
      require(n >= 0, "irdma_poll_ring returned an error");
      for (int i = 0; i < n; i++) check(wc[i]);
      require(cq_.cq_ring.head < cq_.cq_ring.size, "the head left the ring");
      require(shadow_[0] == cq_.cq_ring.head, "shadow qword0 does not name the head");
      if (n <= 0 && head == cq_.cq_ring.head) return true;
    }
    return false;
  }

  std::map<uint32_t, uint64_t> by_status;  // what the hostile rings made the driver say

 private:
  uint32_t pick(uint32_t n) { return uint32_t(rng_() % n); }
  bool coin(uint32_t one_in) { return pick(one_in) == 0; }

  void post_sends(Qp& q, uint32_t n) {
    static constexpr uint8_t kOps[] = {IRDMA_OP_TYPE_SEND, IRDMA_OP_TYPE_RDMA_WRITE, IRDMA_OP_TYPE_RDMA_READ,
                                       IRDMA_OP_TYPE_NOP, IRDMA_OP_TYPE_BIND_MW, IRDMA_OP_TYPE_INV_STAG};
    irdma_ring& r = q.uk.sq_ring;
    for (uint32_t i = 0; i < n; i++) {
      const uint16_t quanta = uint16_t(1 + pick(4));
      if (ring_used(r) + quanta >= r.size) return;
      const uint64_t wr_id = next_wr_id_++;
      q.uk.sq_wrtrk_array[r.head] = {wr_id, pick(4096), quanta, kOps[pick(sizeof kOps)]};
      r.head = ring_add(r.head, quanta, r.size);
      q.sq_posted.push_back(wr_id);
    }
  }

  void post_recvs(Qp& q, uint32_t n) {
    irdma_ring& r = q.uk.rq_ring;
    for (uint32_t i = 0; i < n && ring_used(r) + 1 < r.size; i++) {
      q.uk.rq_wrid_array[r.head] = next_wr_id_;
      q.rq_posted.push_back(next_wr_id_++);
      r.head = ring_next(r.head, r.size);
    }
  }

  uint64_t* slot(uint32_t i) { return mem_.data() + size_t(i) * (cq_.avoid_mem_cflct ? 8 : 4); }
  void step() {
    produced_++;
    if (++tail_ == cq_.cq_ring.size) {
      tail_ = 0;
      polarity_ = !polarity_;
    }
  }

  // Random qwords, the valid bit aside (and, at times, a live QP's context and id).
  void write_raw() {
    uint64_t* s = slot(tail_);
    for (int i = 0; i < (cq_.avoid_mem_cflct ? 8 : 4); i++) s[i] = rng_();
    if (coin(2)) {
      const Qp& q = qps_[pick(uint32_t(qps_.size()))];
      s[1] = q.uk.compl_ctx;
      s[2] = (s[2] & ~(0xFFFFFFull << 32)) | (uint64_t(q.uk.qp_id) << 32);
    }
    s[3] = polarity_ ? s[3] | kValid : s[3] & ~kValid;
    step();
  }

  void write_cqe(const CqeFields& f) {
    const uint32_t at = tail_;
    const bool main_polarity = polarity_;
    const bool wide = cq_.avoid_mem_cflct;
    const bool ext_lands = !coin(8);  // else the extended half is never written
    if (f.extended) {
      if (wide) {
        if (ext_lands) std::memcpy(slot(at) + 4, fmt_.format_ext(f, polarity_).data(), 32);
      } else {
        step();
        if (ext_lands) std::memcpy(slot(tail_), fmt_.format_ext(f, polarity_).data(), 32);
      }
    }
    std::memcpy(slot(at), fmt_.format_main(f, main_polarity).data(), 32);
    step();
  }

  // Every field random, errors and flush codes included, naming a live QP most of the time.
  CqeFields random_fields() {
    CqeFields f = plausible_fields();
    static constexpr uint16_t kMajors[] = {IRDMA_FLUSH_MAJOR_ERR, IRDMA_SRQFLUSH_RSVD_MAJOR_ERR, 0x0002, 0xE001, 0x8029};
    f.wqe_idx = uint16_t(coin(2) ? pick(0x8000) : pick(64));
    f.op = uint8_t(pick(64));
    f.error = coin(2);
    if (f.error) {
      f.major_err = coin(5) ? uint16_t(rng_()) : kMajors[pick(sizeof kMajors / sizeof kMajors[0])];
      f.minor_err = coin(2) ? uint16_t(rng_()) : uint16_t(pick(0x20));
    }
    if (coin(6)) f.qp_ctx = rng_();
    if (coin(6)) f.qp_id = pick(0x1000000);
    if (coin(10)) f.qp_ctx = 0;
    f.push_dropped = coin(2);
    f.stag_or_ipv4 = coin(2);
    f.solicited = coin(2);
    f.stag_or_src_qpn = uint32_t(rng_());
    f.tcp_seq_rtt = uint32_t(rng_());
    f.ud_smac = rng_() & 0xFFFFFFFFFFFFull;
    f.ud_vlan = uint16_t(rng_());
    f.vlan_valid = coin(2);
    f.smac_valid = coin(2);
    return f;
  }

  // A success for the next outstanding work request of a random QP and queue: the kind of
  // CQE that moves the QP's tails, so the hostile ones meet rings in every state.
  CqeFields plausible_fields() {
    Qp& q = qps_[pick(uint32_t(qps_.size()))];
    CqeFields f;
    f.qp_ctx = q.uk.compl_ctx;
    f.qp_id = q.uk.qp_id;
    f.sq = coin(2);
    f.op = f.sq ? uint8_t(pick(0x12)) : uint8_t(coin(2) ? IRDMA_OP_TYPE_REC : IRDMA_OP_TYPE_REC_IMM);
    f.wqe_idx = uint16_t(f.sq ? q.uk.sq_ring.tail : q.uk.rq_ring.tail << q.uk.rq_shift);
    f.payload_len = uint32_t(rng_());
    f.extended = coin(3);
    f.imm_valid = f.extended && coin(2);
    f.imm_data = uint32_t(rng_());
    return f;
  }

  void require(bool ok, const std::string& what) {
    if (!ok) fail_(what);
  }

  void check(const ib_wc& wc) {
    require(wc.status <= ibcore::IB_WC_GENERAL_ERR, "status " + std::to_string(wc.status) + " is no ib_wc_status");
    static const std::set<uint32_t> kOpcodes = {
        ibcore::IB_WC_SEND,    ibcore::IB_WC_RDMA_WRITE, ibcore::IB_WC_RDMA_READ, ibcore::IB_WC_COMP_SWAP,
        ibcore::IB_WC_FETCH_ADD, ibcore::IB_WC_BIND_MW, ibcore::IB_WC_LOCAL_INV,  ibcore::IB_WC_LSO,
        ibcore::IB_WC_FLUSH,   ibcore::IB_WC_ATOMIC_WRITE, ibcore::IB_WC_REG_MR,  ibcore::IB_WC_MASKED_COMP_SWAP,
        ibcore::IB_WC_MASKED_FETCH_ADD, ibcore::IB_WC_RECV, ibcore::IB_WC_RECV_RDMA_WITH_IMM};
    // As in the kernel, an unmapped SQ opcode is a GENERAL_ERR that leaves the opcode
    // alone; IB defines it for successful completions only.
    if (wc.status == ibcore::IB_WC_SUCCESS)
      require(kOpcodes.count(wc.opcode), "a success with opcode " + std::to_string(wc.opcode));
    by_status[wc.status]++;
    const auto q = std::find_if(qps_.begin(), qps_.end(),
                                [&](const Qp& x) { return static_cast<const void*>(wc.qp) == &x.verbs_qp; });
    if (q == qps_.end()) return fail_("an ib_wc names a QP that does not exist");
    require(seen_.insert(wc.wr_id).second, "wr_id " + std::to_string(wc.wr_id) + " reported twice");
    // Each queue reports its work requests in posting order, skipping only retired ones.
    const bool in_sq = std::count(q->sq_posted.begin(), q->sq_posted.end(), wc.wr_id);
    const bool in_rq = std::count(q->rq_posted.begin(), q->rq_posted.end(), wc.wr_id);
    if (!in_sq && !in_rq) return fail_("wr_id " + std::to_string(wc.wr_id) + " was never posted on that QP");
    uint64_t& last = in_sq ? last_sq_[&*q] : last_rq_[&*q];
    const auto& posted = in_sq ? q->sq_posted : q->rq_posted;
    const size_t pos = size_t(std::find(posted.begin(), posted.end(), wc.wr_id) - posted.begin()) + 1;
    require(pos > last, "wr_id " + std::to_string(wc.wr_id) + " reported out of order");
    last = pos;
  }

  Entropy rng_;
  Fail fail_;
  std::vector<uint64_t> mem_;
  uint64_t shadow_[8] = {};
  irdma_cq_uk cq_;
  std::vector<Qp> qps_;
  std::vector<irdma_qp_uk*> table_;
  TlmCqeFormatter fmt_;
  uint32_t tail_ = 0;
  bool polarity_ = true;
  size_t produced_ = 0;
  uint64_t next_wr_id_ = 1;
  std::set<uint64_t> seen_;
  std::map<const Qp*, uint64_t> last_sq_, last_rq_;
};

}  // namespace irdma_sim::testing
