// irdma's "user-kernel" shared layer: the CQ and QP rings as the driver keeps them, the
// CQE reader (irdma_uk_cq_poll_cmpl) and the WQE writers (spec D, G; uk.c in Linux).
#pragma once

#include <cstdint>
#include <vector>

#include "driver/hal/bar.h"
#include "driver/irdma/defs.h"

namespace irdma {

// Plain loads and stores the compiler may not merge or cache: descriptor memory is
// shared with the device.
template <typename T>
inline T READ_ONCE(const T& v) {
  return __atomic_load_n(&v, __ATOMIC_RELAXED);
}
template <typename T>
inline void WRITE_ONCE(T& v, T x) {
  __atomic_store_n(&v, x, __ATOMIC_RELAXED);
}
// For what two driver threads share without a common lock: a QP ring's head is the
// poster's (QP lock), its tail the poller's (CQ lock); each reads the other's. Plain moves
// on x86.
template <typename T>
inline T smp_load_acquire(const T& v) {
  return __atomic_load_n(&v, __ATOMIC_ACQUIRE);
}
template <typename T>
inline void smp_store_release(T& v, T x) {
  __atomic_store_n(&v, x, __ATOMIC_RELEASE);
}

struct irdma_ring {
  uint32_t head = 0;
  uint32_t tail = 0;
  uint32_t size = 0;
};

// Ring steps without division: ring sizes are runtime values and need not be powers of two.
inline uint32_t ring_next(uint32_t idx, uint32_t size) { return idx + 1 == size ? 0 : idx + 1; }
inline uint32_t ring_add(uint32_t idx, uint32_t n, uint32_t size) {
  const uint32_t r = idx + n;
  return r >= size ? r - size : r;
}
inline uint32_t ring_used(const irdma_ring& r) {
  const uint32_t head = smp_load_acquire(r.head), tail = smp_load_acquire(r.tail);
  return head >= tail ? head - tail : head + r.size - tail;
}
// True when `idx` names an outstanding entry: in [tail, head). This runs for every CQE;
// completions come in order, so the first test settles it nearly always.
inline bool ring_outstanding(const irdma_ring& r, uint32_t idx) {
  const uint32_t head = smp_load_acquire(r.head), tail = smp_load_acquire(r.tail);
  if (idx == tail) return head != tail;
  uint32_t from_tail = idx - tail;
  uint32_t used = head - tail;
  if (from_tail >= r.size) from_tail += r.size;
  if (used >= r.size) used += r.size;
  return idx < r.size && from_tail < used;
}

struct irdma_sq_wr_trk_info {
  uint64_t wrid = 0;
  uint32_t wr_len = 0;
  uint16_t quanta = 0;
  uint8_t op = 0;
};

struct irdma_qp_uk {
  uint64_t* sq_base = nullptr;  // 32-byte quanta
  uint64_t* rq_base = nullptr;  // RQ WQEs of (32 << rq_shift) bytes
  uint64_t* shadow_area = nullptr;
  hal::Bar* db = nullptr;       // WQEALLOC doorbell
  std::vector<irdma_sq_wr_trk_info> sq_wrtrk_array;
  std::vector<uint64_t> rq_wrid_array;
  irdma_ring sq_ring;           // in quanta
  irdma_ring rq_ring;           // in WQEs
  irdma_ring initial_ring;      // SQ head at the last doorbell
  uint32_t qp_id = 0;
  uint32_t max_sq_frag_cnt = 1;
  uint32_t max_rq_frag_cnt = 1;
  uint8_t rq_shift = 0;
  uint8_t qp_type = IRDMA_QP_TYPE_ROCE_RC;
  irdma_vers hw_rev = IRDMA_GEN_2;
  uint8_t swqe_polarity = 0;
  uint8_t rwqe_polarity = 0;
  bool destroy_pending = false;  // READ_ONCE/WRITE_ONCE: set by destroy, read by polls
  bool sq_flush_complete = false;  // under the send CQ's lock
  bool rq_flush_complete = false;  // under the receive CQ's lock
  bool flush_seen = false;      // a flush CQE of this QP has been polled (either CQ: atomic)
  void* back_qp = nullptr;      // the verbs-level QP
  // What CQE qword1 carries for this QP. Linux hands the device a pointer; this driver
  // hands it an opaque cookie (id and generation), which keeps runs reproducible and lets
  // the poll path check a CQE's context without dereferencing it.
  uint64_t compl_ctx = 0;
};

// The opaque contexts the device echoes (a QP's compl_ctx, a CQ's ctx before its shift):
// the object's id in the low 32 bits, a generation above that makes every object's new.
constexpr uint64_t irdma_obj_cookie(uint64_t generation, uint32_t id) { return generation << 32 | id; }
constexpr uint32_t irdma_cookie_id(uint64_t cookie) { return uint32_t(cookie); }

struct irdma_cq_poll_info {
  uint64_t wr_id = 0;
  irdma_qp_uk* qp_handle = nullptr;
  uint32_t bytes_xfered = 0;
  uint32_t tcp_seq_num_rtt = 0;
  uint32_t qp_id = 0;
  uint32_t ud_src_qpn = 0;
  uint32_t imm_data = 0;
  uint32_t inv_stag = 0;
  irdma_cmpl_status comp_status = IRDMA_COMPL_STATUS_SUCCESS;
  uint16_t major_err = 0;
  uint16_t minor_err = 0;
  uint16_t ud_vlan = 0;
  uint8_t ud_smac[6] = {};
  uint8_t op_type = 0;
  uint8_t q_type = 0;
  bool stag_invalid_set = false;
  bool push_dropped = false;
  bool error = false;
  bool solicited_event = false;
  bool ipv4 = false;
  bool ud_vlan_valid = false;
  bool ud_smac_valid = false;
  bool imm_valid = false;
};

// The QPs a CQ's completions may name, indexed by QP id. The poll path checks a CQE's
// context against it, so a corrupt or stale CQE is skipped, never dereferenced.
struct irdma_qp_table {
  irdma_qp_uk* const* qps = nullptr;
  uint32_t size = 0;
};

struct irdma_cq_uk {
  uint64_t* cq_base = nullptr;
  uint64_t* shadow_area = nullptr;
  hal::Bar* db = nullptr;       // CQARM
  irdma_ring cq_ring;
  uint32_t cq_id = 0;
  uint32_t cq_size = 0;
  uint8_t polarity = 1;
  bool avoid_mem_cflct = false;  // 64-byte CQEs
  uint8_t cqe_shift = 2;         // log2 of a ring slot in qwords: 2, or 3 with 64-byte CQEs
  irdma_vers hw_rev = IRDMA_GEN_2;
  irdma_qp_table qp_table;
  uint64_t corrupt_cqes = 0;     // CQEs skipped for an unknown context or index
  uint64_t destroyed_qp_cqes = 0;  // CQEs (flushes aside) of a QP being destroyed, dropped
  uint64_t ext_half_waits = 0;  // polls that found a CQE's main half valid and its extended half not yet
  // QPs whose first flush CQE this CQ delivered since the verbs layer last looked: it
  // starts their software flush work (spec G.7).
  std::vector<irdma_qp_uk*> newly_flushed;

  uint64_t* cqe_at(uint32_t idx) const { return cq_base + (uint64_t(idx) << cqe_shift); }
};

void irdma_uk_cq_init(irdma_cq_uk* cq, uint64_t* base, uint64_t* shadow, uint32_t cq_id,
                      uint32_t cq_size, bool avoid_mem_cflct);
// Reads the CQE at head into `info`. Returns 0, -ENOENT (nothing new; or a flush CQE with
// nothing left to flush, consumed), or -EFAULT (a CQE for a destroyed QP or a corrupt one,
// consumed; the caller skips it).
int irdma_uk_cq_poll_cmpl(irdma_cq_uk* cq, irdma_cq_poll_info* info);
// Switches the ring to a new buffer (after MODIFY_CQ): head 0, polarity 1 (spec D.7).
void irdma_uk_cq_resize(irdma_cq_uk* cq, uint64_t* new_base, uint32_t new_size);
// Adds `cnt` retired buffers to SW_CQ_SELECT in shadow qword4; no doorbell (spec D.6).
void irdma_uk_cq_set_resized_cnt(irdma_cq_uk* cq, uint32_t cnt);
// Arms the CQ through its shadow qword4 and the CQARM doorbell.
void irdma_uk_cq_request_notification(irdma_cq_uk* cq, irdma_cmpl_notify notify);
// True when the CQE at head is valid (irdma_cq_empty's negation).
bool irdma_uk_cq_has_cqe(const irdma_cq_uk* cq);
// True when an unpolled CQE of the QP whose context is `qp_compl_ctx` is in the ring.
bool irdma_uk_cq_holds_qp(const irdma_cq_uk* cq, uint64_t qp_compl_ctx);
// Neutralises the unpolled CQEs of a QP being destroyed (their context becomes 0, so they
// are consumed and never reported); head and polarity stay as they are (spec D.8).
// Returns how many CQEs it neutralised, flush CQEs aside.
uint32_t irdma_uk_clean_cq(uint64_t qp_compl_ctx, irdma_cq_uk* cq);
// How many unpolled CQEs still name a QP, flush CQEs aside (what a destroyed CQ took with it).
uint32_t irdma_uk_cq_unpolled(const irdma_cq_uk* cq);

enum irdma_qp_event_type : uint8_t {
  IRDMA_QP_EVENT_CATASTROPHIC = 0,
  IRDMA_QP_EVENT_ACCESS_ERR = 1,
  IRDMA_QP_EVENT_REQ_ERR = 2,
};
struct irdma_qp_err {
  uint16_t flush_code;
  irdma_qp_event_type event_type;
};
// The flush code and QP event an asynchronous event id stands for (spec G.5, GEN_3-era
// table): how a GEN_3 flush CQE's minor code reads, and what a QP's AEQE reports.
irdma_qp_err irdma_ae_to_qp_err_code(uint16_t ae_id);

struct irdma_sge {
  uint64_t addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

struct irdma_post_sq_info {
  uint64_t wr_id = 0;
  uint8_t op_type = IRDMA_OP_TYPE_SEND;
  bool signaled = true;
  bool imm_data_valid = false;
  uint32_t imm_data = 0;
  // REMSTAG: the rkey of an RDMA WRITE/READ's remote buffer, or the STag a SEND_INV has
  // the receiver invalidate; remote_addr: the RDMA WRITE/READ's remote address.
  uint32_t remote_stag = 0;
  uint64_t remote_addr = 0;
  // UD SEND: the destination QP and its QKEY, and the address handle (this driver's
  // loopback device resolves none: 0).
  uint32_t dest_qpn = 0;
  uint32_t dest_qkey = 0;
  uint32_t ah_id = 0;
  // Atomics: the add or swap value, and the compare value.
  uint64_t atomic_data = 0;
  uint64_t atomic_compare = 0;
  const irdma_sge* sg_list = nullptr;
  uint32_t num_sges = 0;
};

// Sizes the SQ/RQ rings as irdma does (reserve quanta included). Returns -EINVAL when the
// request is out of range.
int irdma_uk_qp_init(irdma_qp_uk* qp, uint32_t qp_id, uint32_t sq_wrs, uint32_t rq_wrs,
                     uint32_t max_sq_frags, uint32_t max_rq_frags);
uint32_t irdma_uk_sq_depth_quanta(uint32_t sq_wrs, uint32_t max_sq_frags);
uint8_t irdma_get_wqe_shift(uint32_t sge, uint32_t inline_data);
uint32_t irdma_uk_rq_depth_wqes(uint32_t rq_wrs, uint32_t max_rq_frags, uint8_t* rq_shift);
// What the queues hold, as irdma reports it in ib_qp_cap: work requests of the largest
// size the QP was made for, beyond the reserve.
uint32_t irdma_uk_sq_max_wrs(const irdma_qp_uk& qp);
uint32_t irdma_uk_rq_max_wrs(const irdma_qp_uk& qp);

// Write SQ WQEs: -ENOMEM when the SQ is full, -EINVAL for too many fragments. The three
// share the GEN_2 layout and differ in qword2 (the remote address of RDMA operations) and
// in what may ride along (no immediate on a READ).
int irdma_uk_send(irdma_qp_uk* qp, const irdma_post_sq_info& info);
int irdma_uk_rdma_write(irdma_qp_uk* qp, const irdma_post_sq_info& info);
int irdma_uk_rdma_read(irdma_qp_uk* qp, const irdma_post_sq_info& info);
// FETCH_AND_ADD / COMPARE_AND_SWAP on 8 remote bytes; the first SGE receives the original
// value. Two quanta: the operands in the second.
int irdma_uk_atomic(irdma_qp_uk* qp, const irdma_post_sq_info& info);
// Finds `quanta` SQ quanta at head, padding with unsignaled NOPs so no WQE crosses an
// 8-quanta chunk (and so never the ring's end). Returns the WQE index or -ENOMEM; head
// stays put until irdma_qp_publish_send_wqe.
int64_t irdma_qp_get_next_send_wqe(irdma_qp_uk* qp, uint32_t quanta);
// Records the WQE at `idx` and only then moves head past it: the CQ's poller, on another
// thread, reads the tracking entry of every outstanding WQE when it flushes the SQ.
void irdma_qp_publish_send_wqe(irdma_qp_uk* qp, uint32_t idx, const irdma_sq_wr_trk_info& trk);

// One-quantum WQEs on memory keys (uk_mr.cpp). LOCAL_INV invalidates STag
// `info.remote_stag` here.
int irdma_uk_stag_local_invalidate(irdma_qp_uk* qp, const irdma_post_sq_info& info);

struct irdma_fast_reg_stag_info {
  uint64_t wr_id = 0;
  uint32_t stag = 0;          // index << 8 | key
  uint64_t va = 0;
  uint64_t total_len = 0;
  uint8_t access_rights = 0;  // IRDMA_ACCESS_FLAGS_*
  bool remote_atomics = false;
  uint64_t reg_addr_pa = 0;   // the first page's address
  uint32_t first_pm_pbl_index = 0;
  bool chunk_size = false;    // several pages: a list from first_pm_pbl_index on
  bool signaled = true;
};
// FAST_REG_NSMR (irdma_sc_mr_fast_register): VA-based, 4 KiB pages.
int irdma_sc_mr_fast_register(irdma_qp_uk* qp, const irdma_fast_reg_stag_info& info);

struct irdma_bind_window {
  uint64_t wr_id = 0;
  uint32_t mr_stag = 0;
  uint32_t mw_stag = 0;
  uint64_t va = 0;
  uint64_t len = 0;
  bool ena_reads = false, ena_writes = false, remote_atomics = false;
  bool type1 = true;
  bool signaled = true;
};
// BIND_MW (rdma-core's irdma_uk_mw_bind): VA-based.
int irdma_uk_mw_bind(irdma_qp_uk* qp, const irdma_bind_window& info);
// A NOP (irdma_uk_post_nop), signaled or not.
int irdma_uk_nop(irdma_qp_uk* qp, uint64_t wr_id, bool signaled);
int irdma_uk_post_receive(irdma_qp_uk* qp, uint64_t wr_id, const irdma_sge* sg_list,
                          uint32_t num_sges);
// Rings the WQEALLOC doorbell for what was posted since the last call.
void irdma_uk_qp_post_wr(irdma_qp_uk* qp);

}  // namespace irdma
