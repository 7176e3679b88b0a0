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
#include "driver/irdma/cqp.h"
#include "driver/irdma/event_queues.h"
#include "driver/irdma/flush_wq.h"
#include "driver/irdma/uk.h"

namespace irdma {

// What the device offers, as the driver reads it from the device at probe: the generation
// from its PCI id, object counts from the HMC it commits, CEQs from the FPM query and the
// MSI-X vectors it gets, features from QUERY_RDMA_FEATURES.
struct irdma_device_caps {
  irdma_vers hw_rev = IRDMA_GEN_2;
  uint32_t fw_version = 0;     // major 31:16, minor 15:0
  uint32_t max_cq = 0;         // CQ ids 0 .. max_cq - 1 (0-2 reserved)
  uint32_t max_qp = 0;         // QP ids 0 .. max_qp - 1 (0-1 reserved)
  uint32_t num_ceqs = 0;       // completion vectors
  int max_cqe = IRDMA_MAX_CQ_SIZE - 1;  // as reported to ib-core
  bool cqe_64byte = false;     // IRDMA_FEATURE_64_BYTE_CQE
  bool atomics = false;        // IRDMA_FEATURE_ATOMIC_OPS
  bool cq_resize = false;      // IRDMA_FEATURE_CQ_RESIZE
  uint32_t max_stags = 0;      // STag indexes 1 .. max_stags - 1
  uint32_t pble_entries = 0;   // page-list entries the MRs share
};

// What the driver is told rather than what it finds: Linux's module parameters.
struct irdma_params {
  uint32_t ceq_itr_us = 0;     // interrupt moderation programmed per CEQ vector (dev->ceq_itr)
  uint32_t max_pbles = 65536;  // most page-list entries committed, whatever the device offers
  // Missed-interrupt recovery (event_queues.h): how often the event queues are looked at
  // for entries an interrupt should have announced, and the function for a reset the driver
  // did not ask for; 0 turns it off. It must exceed the moderation interval, or a held-back
  // interrupt looks missed.
  uint32_t eq_watchdog_us = 0;
  // How long a CQP command may go without a completion before the device is given up
  // (Linux: CQP_TIMEOUT_THRESHOLD x CQP_COMPL_WAIT_TIME_MS).
  uint32_t cqp_timeout_ms = 5000;
};

// The HMC as the driver set it up (irdma_hmc_info): where each object sits in the
// function's HMC space, and the host pages backing the page-list object, one 4 KiB page per
// PD entry of paged SDs.
struct irdma_hmc {
  uint64_t base[IRDMA_HMC_IW_MAX] = {};  // bytes
  uint32_t count[IRDMA_HMC_IW_MAX] = {};
  uint32_t max_sds = 0;
  uint32_t max_ceqs = 0;
  hal::DmaBuffer pble;                // the PBLE object's pages, contiguous for the CPU
  std::vector<hal::DmaBuffer> pd_pages;  // one per SD the PBLE object spans
  uint32_t first_sd = 0;
};

struct irdma_event_counters {
  uint64_t interrupts = 0;   // handler runs
  uint64_t ceqes = 0;        // CEQEs consumed (each acknowledged with CQACK)
  uint64_t stale_ceqes = 0;  // of those, for no CQ (context 0 or unknown): skipped
  uint64_t comp_events = 0;  // comp_handler calls
  uint64_t aeqes = 0;        // AEQEs consumed
  uint64_t cq_errors = 0;    // IB_EVENT_CQ_ERR raised
  uint64_t stale_cq_errors = 0;  // CQ error AEQEs for a CQ destroyed before they were read: dropped
  uint64_t cqes_cleaned = 0; // unpolled CQEs of destroyed QPs, never reported (flushes aside)
  uint64_t ceqes_left = 0;   // unconsumed in a CEQ when it was destroyed
  uint64_t cqes_left = 0;    // unpolled in a CQ when it was destroyed (flushes aside)
  uint64_t missed_interrupts = 0;  // handler runs the watchdog made for an interrupt that never came
  uint64_t resets_requested = 0;   // the device given up (request_reset): a CQP timeout, a PCIe error, a reset
  uint64_t pci_errors = 0;         // uncorrectable PCIe errors the host reported (AER)
  // Of resets_requested, by what gave the device up (the first cause only): a CQP timeout,
  // a PCIe error, a reset of the function the watchdog found (function_lost).
  uint64_t resets_on_cqp_timeout = 0, resets_on_pci_error = 0, resets_on_function_lost = 0;
  uint64_t given_up_ns = 0;  // when, on the host's clock (0: never)
};

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
};

struct irdma_pd : ibcore::ib_pd {};

struct irdma_mr : ibcore::ib_mr {
  uint32_t stag_index = 0;
  uint32_t pd_id = 0;
  uint32_t max_pages = 0;
  uint32_t npages = 0;
  uint32_t pble_index = 0;  // its first entry in the page-list pool
};

struct irdma_mw : ibcore::ib_mw {
  uint32_t stag_index = 0;
};

// Locking, as Linux's irdma does it; on OS threads every lock is real, in simulation they
// are uncontended but for holders that wait.
//   - irdma_cq::lock: the CQ's rings, software completions, arming and resize list (poll_cq
//     takes it once per call, never per CQE). irdma_qp::lock: a QP's posting side.
//   - ceq.ce_lock: a CEQ's ring. rsrc_lock_: the id bitmaps and the CQ and QP tables
//     (Linux's rsrc_lock, cqtable_lock and qptable_lock in one). The flush work queue's
//     lock (flush_wq.h): its queue and its worker's state. irdma_cqp's lock: its SQ ring,
//     slots and CCQ, not held while a caller waits for its command (but at probe, before
//     the CCQ exists). ib_device::cq_pools_lock: ib-core's pool lists.
// Order: CQ lock -> QP lock -> the flush work queue's (flush completions, as
// irdma_generate_flush_completions nests them); ce_lock -> rsrc_lock_ -> QP lock
// (request_reset). The flush work queue's, the CQP's and the pool's locks are leaves; no two
// CQ locks nor two QP locks are ever held together.
// Nothing is held across a CQP command, nor while ib-core's comp_handler or event_handler
// runs (a handler may poll, re-arm or post).
// Lookups that race destroy: the CEQ and AEQ handlers take a CQ from cq_table_ with a
// reference that destroy_cq waits out; the poll path reads qp_table_ without a lock, and
// free_qp, having emptied the slot, takes the QP's CQ locks before it frees the QP.
class irdma_device final : public ibcore::ib_device {
 public:
  explicit irdma_device(hal::Platform& hw, const irdma_params& params = {});
  // Frees what the caller left behind in memory only: the device may already be gone.
  ~irdma_device() override;

  // Brings the device up as irdma_ctrl_init_hw and irdma_rt_init_hw do (hw.cpp): its
  // identity, the engine's readiness, the CQP, the HMC, the CCQ, the features, the CEQs
  // and the AEQ. Returns 0 or a negative errno; `probe_error()` says which step failed.
  int probe();
  const std::string& probe_error() const { return probe_error_; }
  const irdma_device_caps& caps() const { return caps_; }
  // Frees pool CQs and stops the CQP; CQs and QPs the caller still holds are its own.
  // Returns how many pool CQs were still in use and so kept.
  int remove();
  // Whether a CQ, QP, PD or memory key made on the device is still held.
  bool in_use() const;

  ibcore::ib_cq* create_cq(const ibcore::ib_cq_init_attr& attr, int& err) override;
  int destroy_cq(ibcore::ib_cq* cq) override;
  int poll_cq(ibcore::ib_cq* cq, int num_entries, ibcore::ib_wc* wc) override;
  int req_notify_cq(ibcore::ib_cq* cq, unsigned flags) override;
  int resize_cq(ibcore::ib_cq* cq, int cqe) override;

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

  hal::Platform& hw() { return hw_; }
  const irdma_params& params() const { return params_; }
  // The control QP, for benches that post commands of their own (the CQP fuzz target).
  irdma_cqp& cqp() { return cqp_; }
  irdma_event_counters event_counters() const;

 private:
  // The event queues' handlers reach the CQP, the CQ table, the counters and, from the
  // watchdog, the reset (irdma_pci_f's handlers take the whole rf).
  friend class irdma_event_queues;
  // Counters several threads bump (handlers of different vectors, destroys).
  struct event_stats {
    std::atomic<uint64_t> interrupts{0}, ceqes{0}, stale_ceqes{0}, comp_events{0}, aeqes{0},
        cq_errors{0}, stale_cq_errors{0}, cqes_cleaned{0}, ceqes_left{0}, cqes_left{0}, missed_interrupts{0},
        resets_requested{0}, pci_errors{0}, resets_on_cqp_timeout{0}, resets_on_pci_error{0}, resets_on_function_lost{0};
  };
  static void bump(std::atomic<uint64_t>& c, uint64_t n = 1) { c.fetch_add(n, std::memory_order_relaxed); }

  // Id allocation under rsrc_lock_ (irdma_alloc_rsrc / irdma_free_rsrc).
  int64_t alloc_id(std::vector<bool>& used, uint32_t& next, uint32_t first);
  void free_id(std::vector<bool>& used, uint32_t id);
  void free_id_locked(std::vector<bool>& used, uint32_t id);  // rsrc_lock_ held
  // Bring-up steps (hw.cpp); each returns 0 or a negative errno, noting what failed.
  int fail(int err, const std::string& what);
  int pci_enable();
  int wait_pe_ready();
  int hmc_setup();
  int hmc_back_pbles();
  int update_sds(uint32_t first_sd, const std::vector<uint64_t>& sd_data);
  void hmc_teardown();
  int query_features();
  uint64_t* pble_list(uint32_t index) const;
  void write_qp_ctx(irdma_qp* qp, uint32_t dest_qp_num, uint32_t qkey);
  void free_cq(irdma_cq* cq);
  irdma_cq* irdma_cq_add_ref(uint64_t ctx);  // the live CQ of a context, referenced, or null
  static void irdma_cq_rem_ref(irdma_cq* cq);
  // Software completions that notify: disarms the CQ and calls its handler if it was armed.
  static void irdma_comp_handler(irdma_cq* cq);
  uint32_t cq_ring_entries(uint32_t cqe) const;
  // DMA memory for a ring of `entries` CQEs (a new CQ's, or a resize's).
  hal::DmaBuffer alloc_cq_ring(uint32_t entries);
  int poll_resized(irdma_cq* cq, int num_entries, ibcore::ib_wc* wc);
  void free_qp(irdma_qp* qp);
  void irdma_clean_cqes(irdma_qp* qp);
  void release_qp(irdma_qp* qp);  // its memory only
  // reset.cpp: a CQP command timed out (the CQP's on_timeout), the host's AER reported
  // an error of the function (pci_error_detected), or the function was reset under the
  // driver (function_lost, which the watchdog asks).
  enum class reset_cause { cqp_timeout, pci_error, function_lost };
  void request_reset(reset_cause cause);
  void pci_error_detected();
  bool function_lost();
  // Software flush completions (spec G.7, flush.cpp): one QP's work for flush_wq_, true
  // when it must run again; a queue's outstanding WQEs into completions (CQ and QP locked),
  // returning how many; QPs the poll path found flushed by the device.
  bool run_flush_work(irdma_qp* qp);
  size_t generate_flush_completions(irdma_qp* qp, bool sq);
  void take_newly_flushed(irdma_cq* cq);
  int alloc_stag(uint32_t index, bool window, uint64_t max_len, uint32_t pd_id);
  int dealloc_stag(uint32_t index, bool window);
  int post_reg_mr(irdma_qp* qp, const ibcore::ib_send_wr& wr);
  void ring_sq(irdma_qp* qp, std::unique_lock<hal::Lock>& guard);
  int post_bind_mw(irdma_qp* qp, const ibcore::ib_send_wr& wr);

  hal::Platform& hw_;
  irdma_params params_;
  irdma_device_caps caps_;
  std::string probe_error_;
  irdma_cqp cqp_;
  irdma_hmc hmc_;
  std::unique_ptr<hal::Lock> rsrc_lock_;
  std::vector<bool> cq_used_, qp_used_;
  uint32_t next_cq_ = 3, next_qp_ = 2;
  uint64_t obj_generation_ = 0;  // makes every CQ and QP context cookie new
  // CQEs are checked against it: written under rsrc_lock_ with release, read by polls.
  std::vector<irdma_qp_uk*> qp_table_;
  std::vector<irdma_cq*> cq_table_;
  std::vector<bool> stag_used_, pble_used_, pd_used_;
  uint64_t ids_in_use_ = 0;  // CQ, QP, PD and STag ids allocated, under rsrc_lock_
  uint32_t next_stag_ = 1, next_pd_ = 1;
  irdma_flush_wq flush_wq_;
  irdma_event_queues eqs_;
  std::atomic<bool> given_up_{false};  // request_reset ran
  std::atomic<uint64_t> given_up_ns_{0};  // when (0: not yet)
  std::unique_ptr<ibcore::ib_poll_workers> workers_;
  event_stats events_;
};

inline irdma_qp* to_iwqp(irdma_qp_uk* uk) {
  return static_cast<irdma_qp*>(static_cast<ibcore::ib_qp*>(uk->back_qp));
}

}  // namespace irdma
