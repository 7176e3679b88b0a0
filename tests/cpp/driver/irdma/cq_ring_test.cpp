// The driver's CQ ring reader against a producer written from the spec's valid/polarity
// rules (D.3): wraps on rings of any size, stale entries, extended CQEs across the wrap,
// 64-byte mode, the shadow head, corrupt and flush CQEs (spec H 11-16, 28).
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "driver/irdma/irdma_device.h"
#include "driver/irdma/poll.h"
#include "driver/irdma/uk.h"
#include "model/device/cqe_format.h"

namespace {

using namespace irdma;
using irdma_sim::device::CqeFields;
using irdma_sim::device::TlmCqeFormatter;

// Writes CQEs as the spec says hardware does: at the producer index, with the pass
// polarity (starting at 1), extended halves in the next slot or the upper 32 bytes.
struct Producer {
  std::vector<uint64_t> mem;
  uint32_t size;
  bool wide;
  uint32_t tail = 0;
  bool polarity = true;
  TlmCqeFormatter fmt;

  Producer(uint32_t entries, bool b64) : mem(size_t(entries) * (b64 ? 8 : 4)), size(entries), wide(b64) {}
  uint64_t* slot(uint32_t i) { return mem.data() + size_t(i) * (wide ? 8 : 4); }
  void step() {
    if (++tail == size) {
      tail = 0;
      polarity = !polarity;
    }
  }
  // `ext_late`: leave the extended half unwritten (returns where it goes).
  uint32_t post(const CqeFields& f, bool ext_late = false) {
    const uint32_t at = tail;
    const auto main = fmt.format_main(f, polarity);
    uint32_t ext_slot = at;
    if (f.extended) {
      if (wide) {
        const auto ext = fmt.format_ext(f, polarity);
        if (!ext_late) std::memcpy(slot(at) + 4, ext.data(), 32);
      } else {
        step();
        ext_slot = tail;
        const auto ext = fmt.format_ext(f, polarity);
        if (!ext_late) std::memcpy(slot(tail), ext.data(), 32);
      }
    }
    std::memcpy(slot(at), main.data(), 32);
    step();
    return ext_slot;
  }
};

struct Fixture {
  Producer prod;
  uint64_t shadow[8] = {};
  irdma_cq_uk cq;
  irdma_qp_uk qp;
  std::vector<irdma_qp_uk*> table = std::vector<irdma_qp_uk*>(16, nullptr);

  Fixture(uint32_t entries, bool b64 = false) : prod(entries, b64) {
    irdma_uk_cq_init(&cq, prod.mem.data(), shadow, 3, entries, b64);
    irdma_uk_qp_init(&qp, 5, 64, 8192, 1, 1);
    qp.compl_ctx = 0x100000005ull;
    table[5] = &qp;
    cq.qp_table = {table.data(), uint32_t(table.size())};
  }
  // An RQ completion for receive `n` (its wr_id is 1000 + n).
  CqeFields recv(uint32_t n, bool ext = false) {
    const uint32_t idx = n % qp.rq_ring.size;
    qp.rq_wrid_array[idx] = 1000 + n;
    qp.rq_ring.head = (idx + 1) % qp.rq_ring.size;
    CqeFields f;
    f.qp_ctx = qp.compl_ctx;
    f.qp_id = 5;
    f.wqe_idx = uint16_t(idx);
    f.payload_len = n;
    f.op = 0x04;
    if (ext) {
      f.extended = f.imm_valid = true;
      f.imm_data = n * 3;
    }
    return f;
  }
};

TEST(CqRing, WrapsAtExactlyTheRingSizeForSizesThatAreNotPowersOfTwo) {
  for (uint32_t size : {2u, 3u, 7u, 602u, 8194u}) {
    Fixture fx(size);
    irdma_cq_poll_info info;
    uint32_t next = 0;
    // Several passes, in bursts that do not divide the ring.
    for (int burst = 0; burst < 9; burst++) {
      const uint32_t n = size / 2 + 1 + burst % 3;
      const uint32_t batch = std::min(n, size);
      for (uint32_t i = 0; i < batch; i++) fx.prod.post(fx.recv(next + i));
      for (uint32_t i = 0; i < batch; i++) {
        ASSERT_EQ(irdma_uk_cq_poll_cmpl(&fx.cq, &info), 0) << "size " << size;
        ASSERT_EQ(info.wr_id, 1000u + next) << "size " << size;
        ASSERT_EQ(info.bytes_xfered, next);
        EXPECT_EQ(fx.shadow[0], fx.cq.cq_ring.head) << "shadow qword0 tracks head";
        next++;
      }
      ASSERT_EQ(irdma_uk_cq_poll_cmpl(&fx.cq, &info), -ENOENT) << "size " << size;
      EXPECT_EQ(fx.cq.cq_ring.head, fx.prod.tail);
      EXPECT_EQ(bool(fx.cq.polarity), fx.prod.polarity);
    }
  }
}

TEST(CqRing, StaleEntryFromThePreviousPassReadsAsEmpty) {
  Fixture fx(4);
  irdma_cq_poll_info info;
  for (uint32_t i = 0; i < 4; i++) fx.prod.post(fx.recv(i));
  for (uint32_t i = 0; i < 4; i++) ASSERT_EQ(irdma_uk_cq_poll_cmpl(&fx.cq, &info), 0);
  // Slot 0 still holds pass 0's entry (valid = 1); pass 1 expects 0.
  EXPECT_EQ(fx.cq.polarity, 0);
  EXPECT_EQ(irdma_uk_cq_poll_cmpl(&fx.cq, &info), -ENOENT);
  EXPECT_FALSE(irdma_uk_cq_has_cqe(&fx.cq));
  fx.prod.post(fx.recv(4));
  EXPECT_EQ(irdma_uk_cq_poll_cmpl(&fx.cq, &info), 0);
  EXPECT_EQ(info.wr_id, 1004u);
}

TEST(CqRing, ExtendedCqeStraddlingTheWrapAdvancesTwiceAndFlipsOnce) {
  Fixture fx(5);
  irdma_cq_poll_info info;
  for (uint32_t i = 0; i < 4; i++) {
    fx.prod.post(fx.recv(i));
    ASSERT_EQ(irdma_uk_cq_poll_cmpl(&fx.cq, &info), 0);
  }
  ASSERT_EQ(fx.cq.cq_ring.head, 4u);
  const uint32_t ext_slot = fx.prod.post(fx.recv(4, true));
  ASSERT_EQ(ext_slot, 0u) << "main half in the last slot, extended half in slot 0";
  ASSERT_EQ(irdma_uk_cq_poll_cmpl(&fx.cq, &info), 0);
  EXPECT_TRUE(info.imm_valid);
  EXPECT_EQ(info.imm_data, 12u);
  EXPECT_EQ(fx.cq.cq_ring.head, 1u);
  EXPECT_EQ(fx.cq.polarity, 0);
  EXPECT_EQ(fx.shadow[0], 1u);
  fx.prod.post(fx.recv(5));
  ASSERT_EQ(irdma_uk_cq_poll_cmpl(&fx.cq, &info), 0);
  EXPECT_EQ(info.wr_id, 1005u);
  EXPECT_FALSE(info.imm_valid) << "an entry without an extended half clears imm_valid";
}

TEST(CqRing, ExtendedHalfNotYetValidConsumesNothing) {
  for (bool wide : {false, true}) {
    Fixture fx(6, wide);
    irdma_cq_poll_info info;
    CqeFields f = fx.recv(0, true);
    const uint32_t ext_slot = fx.prod.post(f, /*ext_late=*/true);
    EXPECT_EQ(irdma_uk_cq_poll_cmpl(&fx.cq, &info), -ENOENT);
    EXPECT_EQ(fx.cq.cq_ring.head, 0u);
    // The extended half lands later: the CQE completes normally.
    const auto ext = TlmCqeFormatter().format_ext(f, true);
    std::memcpy(fx.prod.slot(ext_slot) + (wide ? 4 : 0), ext.data(), 32);
    ASSERT_EQ(irdma_uk_cq_poll_cmpl(&fx.cq, &info), 0);
    EXPECT_EQ(info.imm_data, 0u);
    EXPECT_EQ(fx.cq.cq_ring.head, wide ? 1u : 2u);
  }
}

TEST(CqRing, SixtyFourByteModeTakesOneSlotPerCqe) {
  Fixture fx(3, /*b64=*/true);
  irdma_cq_poll_info info;
  for (uint32_t i = 0; i < 7; i++) {
    fx.prod.post(fx.recv(i, i % 2 == 0));
    ASSERT_EQ(irdma_uk_cq_poll_cmpl(&fx.cq, &info), 0);
    EXPECT_EQ(info.imm_valid, i % 2 == 0);
    EXPECT_EQ(fx.cq.cq_ring.head, (i + 1) % 3);
  }
}

TEST(CqRing, CorruptCqesAreCountedAndSkippedNeverDereferenced) {
  Fixture fx(8);
  irdma_cq_poll_info info;
  CqeFields bad_ctx = fx.recv(0);
  bad_ctx.qp_ctx = 0xdeadbeef00000005ull;  // right id, wrong context
  CqeFields bad_id = fx.recv(0);
  bad_id.qp_id = 0xFFFFFF;                 // no such QP
  CqeFields bad_idx = fx.recv(0);
  bad_idx.wqe_idx = 0x7FFF;                // beyond the RQ
  CqeFields null_ctx = fx.recv(0);
  null_ctx.qp_ctx = 0;
  for (const auto& f : {bad_ctx, bad_id, bad_idx, null_ctx}) fx.prod.post(f);
  fx.prod.post(fx.recv(1));
  for (int i = 0; i < 4; i++) EXPECT_EQ(irdma_uk_cq_poll_cmpl(&fx.cq, &info), -EFAULT);
  EXPECT_EQ(fx.cq.corrupt_cqes, 3u) << "a null context is a destroyed QP's, not corruption";
  ASSERT_EQ(irdma_uk_cq_poll_cmpl(&fx.cq, &info), 0);
  EXPECT_EQ(info.wr_id, 1001u);
}

TEST(CqRing, DuplicateOrStaleCqeNeverMovesTheTailBack) {
  Fixture fx(8);
  irdma_cq_poll_info info;
  const CqeFields first = fx.recv(0);
  fx.prod.post(first);
  fx.prod.post(fx.recv(1));
  ASSERT_EQ(irdma_uk_cq_poll_cmpl(&fx.cq, &info), 0);
  ASSERT_EQ(irdma_uk_cq_poll_cmpl(&fx.cq, &info), 0);
  fx.prod.post(first);  // receive 0 completed again
  EXPECT_EQ(irdma_uk_cq_poll_cmpl(&fx.cq, &info), -EFAULT);
  EXPECT_EQ(fx.cq.corrupt_cqes, 1u);
  EXPECT_EQ(fx.qp.rq_ring.tail, 2u);
}

TEST(CqRing, CleaningACqNeutralisesOnlyThatQpsCqes) {
  Fixture fx(4);
  irdma_qp_uk other;
  irdma_uk_qp_init(&other, 6, 8, 8, 1, 1);
  other.compl_ctx = 0x200000006ull;
  other.rq_ring.head = 1;
  other.rq_wrid_array[0] = 77;
  fx.table[6] = &other;
  irdma_cq_poll_info info;
  // Wrap first, so the walk crosses a polarity flip.
  for (uint32_t i = 0; i < 3; i++) {
    fx.prod.post(fx.recv(i));
    ASSERT_EQ(irdma_uk_cq_poll_cmpl(&fx.cq, &info), 0);
  }
  fx.prod.post(fx.recv(3));
  CqeFields theirs = fx.recv(4);
  theirs.qp_ctx = other.compl_ctx;
  theirs.qp_id = 6;
  theirs.wqe_idx = 0;
  fx.prod.post(theirs);
  fx.prod.post(fx.recv(5, true));  // extended: two slots, the ring is full
  EXPECT_EQ(irdma_uk_cq_unpolled(&fx.cq), 3u) << "an extended CQE's second half names no QP";
  irdma_uk_clean_cq(fx.qp.compl_ctx, &fx.cq);
  EXPECT_EQ(irdma_uk_cq_unpolled(&fx.cq), 1u) << "what a CQ freed now would take with it";
  EXPECT_EQ(fx.cq.cq_ring.head, 3u) << "head untouched";
  EXPECT_EQ(irdma_uk_cq_poll_cmpl(&fx.cq, &info), -EFAULT);
  ASSERT_EQ(irdma_uk_cq_poll_cmpl(&fx.cq, &info), 0);
  EXPECT_EQ(info.wr_id, 77u) << "another QP's CQE survives";
  EXPECT_EQ(irdma_uk_cq_poll_cmpl(&fx.cq, &info), -EFAULT);
  EXPECT_EQ(fx.cq.corrupt_cqes, 0u);
  EXPECT_EQ(irdma_uk_cq_poll_cmpl(&fx.cq, &info), -ENOENT);
}

TEST(QpRings, DepthsBeyondWhatA15BitIndexReachesAreRefused) {
  irdma_qp_uk qp;
  EXPECT_EQ(irdma_uk_qp_init(&qp, 2, 16000, 8, 1, 1), 0);
  EXPECT_EQ(irdma_uk_qp_init(&qp, 2, 20000, 8, 1, 1), -EINVAL);
  EXPECT_EQ(irdma_uk_qp_init(&qp, 2, 8, 32767, 1, 1), 0);
  EXPECT_EQ(irdma_uk_qp_init(&qp, 2, 8, 32768, 1, 1), -EINVAL);
  EXPECT_EQ(irdma_uk_qp_init(&qp, 2, 8, 16383, 3, 3), 0) << "RQ WQEs of two quanta";
  EXPECT_EQ(irdma_uk_qp_init(&qp, 2, 8, 16384, 3, 3), -EINVAL);
}

// A WQE is outstanding (and so readable by a poller flushing the queue on another thread)
// only once its tracking entry is written: reserving room leaves head where it is.
TEST(QpRings, AWqeBecomesOutstandingOnlyWhenItsTrackingEntryIsPublished) {
  irdma_qp_uk qp;
  ASSERT_EQ(irdma_uk_qp_init(&qp, 2, 64, 8, 2, 1), 0);
  std::vector<uint64_t> sq(4 * qp.sq_ring.size);
  qp.sq_base = sq.data();
  qp.sq_ring.head = qp.sq_ring.tail = 7;  // two quanta more would cross an 8-quanta chunk
  const int64_t idx = irdma_qp_get_next_send_wqe(&qp, 2);
  ASSERT_EQ(idx, 8) << "padded to the chunk";
  EXPECT_EQ(qp.sq_ring.head, 8u) << "the pad NOP is published, the WQE is not";
  EXPECT_EQ(qp.sq_wrtrk_array[7].op, IRDMA_OP_TYPE_NOP);
  irdma_qp_publish_send_wqe(&qp, uint32_t(idx), {42, 64, 2, IRDMA_OP_TYPE_SEND});
  EXPECT_EQ(qp.sq_ring.head, 10u);
  EXPECT_EQ(qp.sq_wrtrk_array[8].wrid, 42u);
}

TEST(CqRing, DestroyPendingQpCompletionsAreConsumedNotReported) {
  Fixture fx(8);
  irdma_cq_poll_info info;
  fx.prod.post(fx.recv(0));
  fx.qp.destroy_pending = true;
  EXPECT_EQ(irdma_uk_cq_poll_cmpl(&fx.cq, &info), -EFAULT);
  EXPECT_EQ(fx.cq.cq_ring.head, 1u);
  EXPECT_EQ(fx.cq.corrupt_cqes, 0u);
}

// GEN_2: one flush CQE for an RQ with three outstanding receives yields three completions,
// the first with the real error, head parked until the queue is drained (spec H 28).
TEST(CqRing, Gen2FlushCqeExpandsToEveryOutstandingReceive) {
  Fixture fx(8);
  irdma_cq_poll_info info;
  for (uint32_t i = 0; i < 3; i++) fx.qp.rq_wrid_array[i] = 500 + i;
  fx.qp.rq_ring.head = 3;
  CqeFields flush;
  flush.qp_ctx = fx.qp.compl_ctx;
  flush.qp_id = 5;
  flush.error = true;
  flush.major_err = IRDMA_FLUSH_MAJOR_ERR;
  flush.minor_err = FLUSH_PROT_ERR;
  fx.prod.post(flush);

  ibcore::ib_wc wc{};
  ASSERT_EQ(irdma_poll_one(&fx.cq, &info, &wc), 0);
  EXPECT_EQ(wc.wr_id, 500u);
  EXPECT_EQ(wc.status, ibcore::IB_WC_LOC_PROT_ERR);
  EXPECT_EQ(wc.vendor_err, 0x10002u);
  EXPECT_EQ(fx.cq.cq_ring.head, 0u) << "parked";
  for (uint64_t id : {501u, 502u}) {
    ASSERT_EQ(irdma_poll_one(&fx.cq, &info, &wc), 0);
    EXPECT_EQ(wc.wr_id, id);
    EXPECT_EQ(wc.status, ibcore::IB_WC_WR_FLUSH_ERR);
  }
  EXPECT_EQ(fx.cq.cq_ring.head, 1u) << "released once the RQ is empty";
  EXPECT_TRUE(fx.qp.rq_flush_complete);
  EXPECT_EQ(irdma_uk_cq_poll_cmpl(&fx.cq, &info), -ENOENT);
}

// An error CQE for QP 5: a flush (major 1) or anything else.
CqeFields error_cqe(bool sq, uint16_t major, uint16_t minor, uint16_t wqe_idx = 0) {
  CqeFields f;
  f.qp_ctx = 0x100000005ull;
  f.qp_id = 5;
  f.sq = sq;
  f.wqe_idx = wqe_idx;
  f.error = true;
  f.major_err = major;
  f.minor_err = minor;
  return f;
}

// SQ flush: NOPs complete silently, a WQE of several quanta moves the tail by all of them
// (spec H 29).
TEST(CqRing, SqFlushSkipsNopsAndStepsByQuanta) {
  Fixture fx(8);
  fx.qp.sq_wrtrk_array[0] = {700, 10, 2, IRDMA_OP_TYPE_SEND};
  fx.qp.sq_wrtrk_array[2] = {0, 0, 1, IRDMA_OP_TYPE_NOP};
  fx.qp.sq_wrtrk_array[3] = {701, 20, 1, IRDMA_OP_TYPE_RDMA_WRITE};
  fx.qp.sq_ring.head = 4;
  fx.prod.post(error_cqe(true, IRDMA_FLUSH_MAJOR_ERR, FLUSH_LOC_LEN_ERR));
  irdma_cq_poll_info info;
  ibcore::ib_wc wc{};
  ASSERT_EQ(irdma_poll_one(&fx.cq, &info, &wc), 0);
  EXPECT_EQ(wc.wr_id, 700u);
  EXPECT_EQ(wc.status, ibcore::IB_WC_LOC_LEN_ERR);
  EXPECT_EQ(wc.opcode, ibcore::IB_WC_SEND);
  EXPECT_EQ(fx.qp.sq_ring.tail, 2u);
  ASSERT_EQ(irdma_poll_one(&fx.cq, &info, &wc), 0);
  EXPECT_EQ(wc.wr_id, 701u) << "the NOP between them is not reported";
  EXPECT_EQ(wc.status, ibcore::IB_WC_WR_FLUSH_ERR);
  EXPECT_EQ(wc.opcode, ibcore::IB_WC_RDMA_WRITE);
  EXPECT_TRUE(fx.qp.sq_flush_complete);
  EXPECT_EQ(fx.cq.cq_ring.head, 1u);
  EXPECT_EQ(irdma_uk_cq_poll_cmpl(&fx.cq, &info), -ENOENT);
}

// The kernel reports a BIND_MW flushed with a protection error as a bind error; with no
// ib_wc opcode for BIND_MW the status it delivers is IB_WC_GENERAL_ERR (spec H 29, G.6).
TEST(CqRing, FlushedBindMwWithAProtectionErrorIsABindError) {
  Fixture fx(8);
  fx.qp.sq_wrtrk_array[0] = {800, 0, 1, IRDMA_OP_TYPE_BIND_MW};
  fx.qp.sq_ring.head = 1;
  fx.prod.post(error_cqe(true, IRDMA_FLUSH_MAJOR_ERR, FLUSH_PROT_ERR));
  irdma_cq_poll_info info;
  ibcore::ib_wc wc{};
  ASSERT_EQ(irdma_poll_one(&fx.cq, &info, &wc), 0);
  EXPECT_EQ(info.minor_err, FLUSH_MW_BIND_ERR);
  EXPECT_EQ(wc.vendor_err, 0x10009u);
  EXPECT_EQ(wc.status, ibcore::IB_WC_GENERAL_ERR);
}

// A flush CQE with nothing left to flush is consumed and ends the poll call, even with a
// CQE behind it (spec H 30).
TEST(CqRing, FlushCqeWithNothingOutstandingIsConsumedAndEndsThePoll) {
  Fixture fx(8);
  fx.qp.sq_wrtrk_array[0] = {700, 10, 1, IRDMA_OP_TYPE_SEND};
  fx.qp.sq_ring.head = 1;
  fx.prod.post(error_cqe(false, IRDMA_FLUSH_MAJOR_ERR, FLUSH_GENERAL_ERR));  // the RQ is empty
  CqeFields send;
  send.qp_ctx = fx.qp.compl_ctx;
  send.qp_id = 5;
  send.sq = true;
  send.op = IRDMA_OP_TYPE_SEND;
  fx.prod.post(send);
  ibcore::ib_wc wc[4];
  EXPECT_EQ(irdma_poll_ring(&fx.cq, 4, wc), 0);
  EXPECT_EQ(fx.cq.cq_ring.head, 1u) << "consumed";
  ASSERT_EQ(irdma_poll_ring(&fx.cq, 4, wc), 1);
  EXPECT_EQ(wc[0].wr_id, 700u);
}

// GEN_3: no parking, and a 0xFFFE major carries an asynchronous event id whose flush code
// is the status (spec H 31). GEN_2 knows no such major: a general error.
TEST(CqRing, Gen3FlushWithAnEventIdDoesNotPark) {
  for (const irdma_vers gen : {IRDMA_GEN_3, IRDMA_GEN_2}) {
    Fixture fx(8);
    fx.cq.hw_rev = fx.qp.hw_rev = gen;
    for (uint32_t i = 0; i < 2; i++) fx.qp.rq_wrid_array[i] = 500 + i;
    fx.qp.rq_ring.head = 2;
    fx.prod.post(error_cqe(false, IRDMA_SRQFLUSH_RSVD_MAJOR_ERR, 0x50a));  // LLP_TOO_MANY_RETRIES
    irdma_cq_poll_info info;
    ibcore::ib_wc wc{};
    ASSERT_EQ(irdma_poll_one(&fx.cq, &info, &wc), 0);
    EXPECT_EQ(wc.wr_id, 500u);
    EXPECT_EQ(fx.cq.cq_ring.head, 1u) << "consumed although a receive is still outstanding";
    if (gen == IRDMA_GEN_3) {
      EXPECT_EQ(wc.status, ibcore::IB_WC_RETRY_EXC_ERR);
      EXPECT_EQ(wc.vendor_err, 0xFFFE0008u);
    } else {
      EXPECT_EQ(wc.status, ibcore::IB_WC_GENERAL_ERR);
      EXPECT_EQ(wc.vendor_err, 0xFFFE050Au);
    }
  }
}

// GEN_3 RoCE UD send errors with the CIE signature are notices, reported as successes
// (spec H 32); on an RC QP, or on GEN_2, they stay errors.
TEST(CqRing, Gen3UdSendNoticeIsASuccess) {
  struct Case {
    irdma_vers gen;
    uint8_t qp_type;
    ibcore::ib_wc_status want;
  };
  for (const Case c : {Case{IRDMA_GEN_3, IRDMA_QP_TYPE_ROCE_UD, ibcore::IB_WC_SUCCESS},
                       Case{IRDMA_GEN_3, IRDMA_QP_TYPE_ROCE_RC, ibcore::IB_WC_GENERAL_ERR},
                       Case{IRDMA_GEN_2, IRDMA_QP_TYPE_ROCE_UD, ibcore::IB_WC_GENERAL_ERR}}) {
    Fixture fx(8);
    fx.cq.hw_rev = fx.qp.hw_rev = c.gen;
    fx.qp.qp_type = c.qp_type;
    fx.qp.sq_wrtrk_array[0] = {900, 64, 1, IRDMA_OP_TYPE_SEND};
    fx.qp.sq_ring.head = 1;
    CqeFields f = error_cqe(true, 0xE123, 0x0042);
    f.op = IRDMA_OP_TYPE_SEND;
    fx.prod.post(f);
    irdma_cq_poll_info info;
    ibcore::ib_wc wc{};
    ASSERT_EQ(irdma_poll_one(&fx.cq, &info, &wc), 0);
    EXPECT_EQ(wc.wr_id, 900u);
    EXPECT_EQ(wc.status, c.want) << "gen " << c.gen << ", qp type " << int(c.qp_type);
    if (c.want == ibcore::IB_WC_SUCCESS) {
      EXPECT_EQ(wc.byte_len, 64u);
    }
  }
}

// A receive's error that is not a flush names the oldest outstanding receive, whatever
// its WQE index says (spec H 33).
TEST(CqRing, NonFlushReceiveErrorNamesTheRingTail) {
  Fixture fx(8);
  for (uint32_t i = 0; i < 3; i++) fx.qp.rq_wrid_array[i] = 600 + i;
  fx.qp.rq_ring.head = 3;
  fx.prod.post(error_cqe(false, 0x0002, FLUSH_LOC_LEN_ERR, 2));
  irdma_cq_poll_info info;
  ibcore::ib_wc wc{};
  ASSERT_EQ(irdma_poll_one(&fx.cq, &info, &wc), 0);
  EXPECT_EQ(wc.wr_id, 600u);
  EXPECT_EQ(wc.status, ibcore::IB_WC_GENERAL_ERR);
  EXPECT_EQ(wc.vendor_err, 0x20006u);
  EXPECT_EQ(fx.qp.rq_ring.tail, 1u);
  EXPECT_EQ(fx.cq.cq_ring.head, 1u) << "not a flush: no parking";
}

}  // namespace
