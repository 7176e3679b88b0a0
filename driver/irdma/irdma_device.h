// The irdma provider as ib-core sees it: the device, its CQs and QPs, and the verbs
// (irdma_create_cq, irdma_poll_cq, irdma_req_notify_cq, irdma_post_send, ...).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "driver/core/cq_poll.h"
#include "driver/core/err_ptr.h"
#include "driver/core/ib_device.h"
#include "driver/core/ib_qp.h"
#include "driver/hal/platform.h"
#include "driver/irdma/flush_wq.h"
#include "driver/irdma/main.h"
#include "driver/irdma/uk.h"

namespace irdma {

// Everything below `lock` is under it, but for what create_cq set once.
struct irdma_cq : ibcore::ib_cq {
  std::unique_ptr<hal::Lock> lock;
  // Set by req_notify_cq when it arms, cleared by whoever consumes the event (the CEQ
  // handler, or software completions that notify): atomic, as the kernel keeps it.
  std::atomic<bool> armed{false};
  // Event handlers that took the CQ from the table and have not finished with it yet:
  // destroy_cq waits for them (irdma_cq_add_ref / irdma_cq_rem_ref).
  std::atomic<uint32_t> refcnt{0};
  irdma_cq_uk sc_cq;
  hal::DmaBuffer ring, shadow;
  uint32_t cq_num = 0;
  uint64_t ctx = 0;            // the CQ context the device echoes in CEQEs
  uint32_t ceq_id = 0;
  irdma_cmpl_notify last_notify = IRDMA_CQ_COMPL_EVENT;
  // Software flush completions (spec G.7), reported once the ring has none left.
  std::deque<irdma_cq_poll_info> cmpl_generated;
  // Buffers a resize retired, oldest first: polled before the current one until drained.
  struct retired_buf {
    irdma_cq_uk uk;
    hal::DmaBuffer ring;
  };
  std::deque<retired_buf> resize_list;
  uint64_t resizes = 0;
  uint64_t retired_polled = 0;  // completions found in retired rings
  // The ring and shadow area are an application's (ring and shadow hold only their DMA
  // addresses): it polls and arms the CQ itself, the kernel only hears its events.
  bool user_mode = false;
  struct irdma_ucontext* uctx = nullptr;  // a user CQ's: where its resize finds its new ring
};

struct irdma_qp : ibcore::ib_qp {
  // The SQ and RQ as the poster sees them (head, WQEs, tracking), flush_issued, and the
  // rings' tails while flush completions are generated.
  std::unique_ptr<hal::Lock> lock;
  irdma_qp_uk qp_uk;
  hal::DmaBuffer queues;    // SQ, then RQ, then the QP shadow area
  hal::DmaBuffer host_ctx;
  uint32_t pd_id = 0;
  // The device was told to flush this QP, or showed it did: posts no longer ring the
  // doorbell and their work completes in software (spec G.7).
  bool flush_issued = false;
  uint64_t flush_due_ns = 0;  // when the flush work runs; 0: not scheduled (irdma_flush_wq's lock)
  // Where the device finds the rings: `queues` for the kernel's QPs, an application's
  // registered memory for a user QP (whose queues, and qp_uk's rings, stay empty).
  uint64_t sq_pa = 0, rq_pa = 0, shadow_pa = 0;
  bool user_mode = false;
  // What ib_query_qp answers: the attributes last set, the caps it was made with.
  ibcore::ib_qp_attr attr;
  ibcore::ib_qp_init_attr init_attr;
  std::atomic<unsigned> refcnt{0};  // the AEQ handler's, which a destroy waits out
};

struct irdma_pd : ibcore::ib_pd {};

struct irdma_mr : ibcore::ib_mr {
  uint32_t stag_index = 0;
  uint32_t pd_id = 0;
  uint32_t max_pages = 0;
  uint32_t npages = 0;
  uint32_t pble_index = 0;  // its first entry in the page-list pool
  // A user registration (irdma_reg_user_mr): its pinned pages, what they are for, and for
  // QP and CQ memory the pages of each part.
  std::unique_ptr<ibcore::ib_umem> umem;
  uint16_t reg_type = 0;  // irdma_memreg_type
  uint16_t sq_pages = 0, rq_pages = 0, cq_pages = 0;
  bool listed = false;  // on its context's qp or cq list, until a create takes it
  struct irdma_ucontext* uctx = nullptr;
};

// Whether the first `n` blocks are one DMA-contiguous range.
bool irdma_dma_contiguous(const std::vector<uint64_t>& blocks, size_t n);
// irdma_get_mr_access: an ib_access_flags mask as the device's STag rights.
uint8_t irdma_get_mr_access(int access);

// A user context (struct irdma_ucontext): the QP and CQ memory registered and not yet taken
// by a create, found by the address the create names.
struct irdma_ucontext : ibcore::ib_ucontext {
  std::unique_ptr<hal::Lock> lock;  // the lists
  std::vector<irdma_mr*> qp_reg_mem_list, cq_reg_mem_list;
};

struct irdma_ah : ibcore::ib_ah {
  uint32_t ah_id = 0;
};

struct irdma_mw : ibcore::ib_mw {
  uint32_t stag_index = 0;
};

// Locking, as Linux's irdma does it; on OS threads every lock is real, in simulation they
// are uncontended but for holders that wait.
//   - irdma_cq::lock: the CQ's rings, software completions, arming and resize list (poll_cq
//     takes it once per call, never per CQE). irdma_qp::lock: a QP's posting side.
//   - ceq.ce_lock: a CEQ's ring. irdma_pci_f::rsrc_lock: the id bitmaps and the CQ and QP tables
//     (Linux's rsrc_lock, cqtable_lock and qptable_lock in one). The flush work queue's
//     lock (flush_wq.h): its queue and its worker's state. irdma_cqp's lock: its SQ ring,
//     slots and CCQ, not held while a caller waits for its command (but at probe, before
//     the CCQ exists). ib_device::cq_pools_lock: ib-core's pool lists.
// Order: CQ lock -> QP lock -> the flush work queue's (flush completions, as
// irdma_generate_flush_completions nests them); ce_lock -> rsrc_lock -> QP lock
// (recover_from_reset). The flush work queue's, the CQP's and the pool's locks are leaves; no two
// CQ locks nor two QP locks are ever held together.
// Nothing is held across a CQP command, nor while ib-core's comp_handler or event_handler
// runs (a handler may poll, re-arm or post).
// Lookups that race destroy: the CEQ and AEQ handlers take a CQ from the cq_table with a
// reference that destroy_cq waits out; the poll path reads the qp_table without a lock, and
// free_qp, having emptied the slot, takes the QP's CQ locks before it frees the QP.
// The verbs layer (Linux's irdma_device, with verbs.c): what ib-core calls, over the PCI
// function it owns (rf_), whose resources, event queues and reset it shares with no one.
class irdma_device final : public ibcore::ib_device {
 public:
  explicit irdma_device(hal::Platform& hw, const irdma_params& params = {});
  // Frees what the caller left behind in memory only: the device may already be gone.
  ~irdma_device() override;

  // Brings the device up as irdma_ctrl_init_hw and irdma_rt_init_hw do (hw.cpp): its
  // identity, the engine's readiness, the CQP, the HMC, the CCQ, the features, the CEQs
  // and the AEQ. Returns 0 or a negative errno; `probe_error()` says which step failed.
  int probe();
  const std::string& probe_error() const { return rf_.sc_dev.init_error; }
  const irdma_device_caps& caps() const { return rf_.sc_dev.caps; }
  // Frees pool CQs and stops the CQP; CQs and QPs the caller still holds are its own.
  // Returns how many pool CQs were still in use and so kept.
  int remove();
  // Whether a CQ, QP, PD or memory key made on the device is still held.
  bool in_use() const { return rf_.in_use(); }

  ibcore::ib_cq* create_cq(const ibcore::ib_cq_init_attr& attr, int& err) override;
  int destroy_cq(ibcore::ib_cq* cq) override;
  int poll_cq(ibcore::ib_cq* cq, int num_entries, ibcore::ib_wc* wc) override;
  int req_notify_cq(ibcore::ib_cq* cq, unsigned flags) override;
  int resize_cq(ibcore::ib_cq* cq, int cqe) override;

  // What user space reaches through uverbs (verbs_ucontext.cpp, verbs_mr.cpp).
  int query_device(ibcore::ib_device_attr* attr) override;
  int query_port(uint32_t port, ibcore::ib_port_attr* attr) override;
  ibcore::ib_ucontext* alloc_ucontext(ibcore::ib_udata& udata, int& err) override;
  void dealloc_ucontext(ibcore::ib_ucontext* uctx) override;
  int mmap(ibcore::ib_ucontext* uctx, uint64_t offset, uint64_t length, ibcore::ib_mmap_range* out) override;
  ibcore::ib_pd* alloc_user_pd(ibcore::ib_ucontext* uctx, ibcore::ib_udata& udata, int& err) override;
  int dealloc_user_pd(ibcore::ib_pd* pd) override;
  // User memory (verbs_umem.cpp), CQs (verbs_cq.cpp) and QPs (verbs_uqp.cpp).
  ibcore::ib_mr* reg_user_mr(ibcore::ib_ucontext* uctx, ibcore::ib_pd* pd, uint64_t start, uint64_t length,
                             uint64_t virt, int access, ibcore::ib_udata& udata, int& err) override;
  int dereg_user_mr(ibcore::ib_mr* mr) override;
  ibcore::ib_mw* alloc_user_mw(ibcore::ib_pd* pd, uint8_t type, int& err) override;
  int dealloc_user_mw(ibcore::ib_mw* mw) override;
  ibcore::ib_cq* create_user_cq(ibcore::ib_ucontext* uctx, const ibcore::ib_cq_init_attr& attr,
                                ibcore::ib_udata& udata, int& err) override;
  int resize_user_cq(ibcore::ib_cq* cq, int cqe, ibcore::ib_udata& udata) override;
  ibcore::ib_qp* create_user_qp(ibcore::ib_ucontext* uctx, ibcore::ib_pd* pd, ibcore::ib_qp_init_attr& attr,
                                ibcore::ib_udata& udata, int& err) override;
  int modify_user_qp(ibcore::ib_qp* qp, const ibcore::ib_qp_attr& attr, uint32_t mask) override;
  int query_user_qp(ibcore::ib_qp* qp, ibcore::ib_qp_attr* attr, ibcore::ib_qp_init_attr* init) override;
  int destroy_user_qp(ibcore::ib_qp* qp) override;
  ibcore::ib_ah* create_user_ah(ibcore::ib_pd* pd, const ibcore::rdma_ah_attr& attr, ibcore::ib_udata& udata,
                                int& err) override;
  int destroy_user_ah(ibcore::ib_ah* ah) override;

  // `pd`: null for the kernel's own PD 0, where every ULP key of this driver's lives.
  ibcore::ErrPtr<irdma_qp> create_qp(ibcore::ib_qp_init_attr& attr, ibcore::ib_pd* pd = nullptr);
  // Protection domains (verbs_mr.cpp): ib_alloc_pd, ib_dealloc_pd. PD 0 is the kernel's.
  ibcore::ErrPtr<irdma_pd> alloc_pd();
  int dealloc_pd(irdma_pd* pd);
  // Moves a QP to RTS (MODIFY_QP through the CQP): an RC QP connected to `dest_qp_num`, a
  // UD QP accepting datagrams that carry `qkey`.
  int connect_qp(irdma_qp* qp, uint32_t dest_qp_num, uint32_t qkey = 0);
  int destroy_qp(irdma_qp* qp);
  // Moves a QP to the error state as ib_modify_qp(IB_QPS_ERR) does: the device flushes
  // both queues (FLUSH_WQES, spec F.7). -EALREADY when the QP is already flushed.
  int flush_qp(irdma_qp* qp);
  int post_send(irdma_qp* qp, const ibcore::ib_send_wr* wr, const ibcore::ib_send_wr** bad_wr);
  int post_recv(irdma_qp* qp, const ibcore::ib_recv_wr* wr, const ibcore::ib_recv_wr** bad_wr);

  // A NOP on the SQ (irdma_uk_post_nop): the kernel posts them itself; a signaled one
  // completes with an opcode ib_wc has none for.
  int post_nop(irdma_qp* qp, uint64_t wr_id, bool signaled);

  // Memory regions for fast registration and memory windows (verbs_mr.cpp): ib_alloc_mr,
  // ib_map_mr_sg over one DMA-contiguous range (returns the pages mapped), ib_dereg_mr,
  // ib_alloc_mw, ib_dealloc_mw.
  ibcore::ErrPtr<irdma_mr> alloc_mr(uint32_t max_num_sg, ibcore::ib_pd* pd = nullptr);
  int map_mr_sg(irdma_mr* mr, uint64_t dma_addr, uint64_t length);
  int dereg_mr(irdma_mr* mr);
  ibcore::ErrPtr<irdma_mw> alloc_mw(ibcore::ib_pd* pd = nullptr);
  int dealloc_mw(irdma_mw* mw);

  hal::Platform& hw() { return rf_.sc_dev.hw; }
  const irdma_params& params() const { return rf_.params; }
  // The control QP, for benches that post commands of their own (the CQP fuzz target).
  irdma_cqp& cqp() { return rf_.sc_dev.cqp; }
  irdma_event_counters event_counters() const { return rf_.event_counters(); }

 private:
  // irdma_init_roce_device and ib_register_device's caching of the attributes.
  void register_device();
  void write_qp_ctx(irdma_qp* qp, uint32_t dest_qp_num, uint32_t qkey);
  // The CQP's CREATE_QP for a QP whose rings and context are in place; MODIFY_QP once its
  // context was rewritten; DESTROY_QP.
  int create_qp_cmd(irdma_qp* qp);
  int modify_qp_cmd(irdma_qp* qp);
  int destroy_qp_cmd(irdma_qp* qp);
  // irdma_get_pbl: takes the registration at `user_base` off the context's list.
  irdma_mr* irdma_get_pbl(irdma_ucontext* uctx, uint64_t user_base, uint16_t reg_type);
  // The CQP's CREATE_CQ for a CQ whose ring and shadow area are in place.
  int create_cq_cmd(irdma_cq* cq, uint32_t entries);
  // A CQ's number and context cookie, and its slot in the table once the device has it.
  int64_t alloc_cq_num();
  void publish_cq(irdma_cq* cq);
  void free_cq(irdma_cq* cq);
  // Software completions that notify: disarms the CQ and calls its handler if it was armed.
  static void irdma_comp_handler(irdma_cq* cq);
  uint32_t cq_ring_entries(uint32_t cqe) const;
  // DMA memory for a ring of `entries` CQEs (a new CQ's, or a resize's).
  hal::DmaBuffer alloc_cq_ring(uint32_t entries);
  int poll_resized(irdma_cq* cq, int num_entries, ibcore::ib_wc* wc);
  // The CQP's MODIFY_CQ that moves a CQ to a new ring of `entries` CQEs.
  int resize_cq_cmd(irdma_cq* cq, uint32_t entries, uint64_t ring_iova);
  void free_qp(irdma_qp* qp);
  void irdma_clean_cqes(irdma_qp* qp);
  // Into the qp_table once the device has it, where polls and the AEQ handler find it; out
  // of it with its id freed and the handlers' references waited out. Its event handler is
  // `attr`'s before any AE can find it.
  void publish_qp(irdma_qp* qp, const ibcore::ib_qp_init_attr& attr);
  void unpublish_qp(irdma_qp* qp);
  void release_qp(irdma_qp* qp);  // its memory only
  // Software flush completions (spec G.7, flush.cpp): one QP's work for flush_wq_, true
  // when it must run again; a queue's outstanding WQEs into completions (CQ and QP locked),
  // returning how many; QPs the poll path found flushed by the device.
  bool run_flush_work(irdma_qp* qp);
  size_t generate_flush_completions(irdma_qp* qp, bool sq);
  void take_newly_flushed(irdma_cq* cq);
  // The CQP's FLUSH_WQES of both queues, as general flushes.
  int irdma_flush_wqes(irdma_qp* qp);
  // After the device was given up (rf_.reset's recover): every QP's outstanding work
  // completes in software as flushed, as later posts do, and ib-core's client is told.
  void recover_from_reset();
  int alloc_stag(uint32_t index, bool window, uint64_t max_len, uint32_t pd_id);
  int dealloc_stag(uint32_t index, bool window);
  int post_reg_mr(irdma_qp* qp, const ibcore::ib_send_wr& wr);
  int irdma_hwreg_mr(irdma_mr* mr, uint8_t rights);
  void ring_sq(irdma_qp* qp, std::unique_lock<hal::Lock>& guard);
  int post_bind_mw(irdma_qp* qp, const ibcore::ib_send_wr& wr);

  irdma_pci_f rf_;
  irdma_flush_wq flush_wq_;
  std::unique_ptr<ibcore::ib_poll_workers> workers_;
};

inline irdma_qp* to_iwqp(irdma_qp_uk* uk) {
  return static_cast<irdma_qp*>(static_cast<ibcore::ib_qp*>(uk->back_qp));
}

}  // namespace irdma
