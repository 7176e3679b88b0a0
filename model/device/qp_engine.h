// The QP engine: QP contexts, SQ WQEs fetched after the WQEALLOC doorbell, executed by
// loopback to the peer QP (consuming one of its RQ WQEs and moving the payload), and
// completions handed to the CQ engine.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "model/device/aeq_engine.h"
#include "model/device/cq_engine.h"
#include "model/device/device_config.h"
#include "model/device/dma_port.h"
#include "model/device/engine_time.h"
#include "model/device/hmc.h"
#include "model/device/ring_pos.h"
#include "model/device/stag_table.h"
#include "model/trace/trace_log.h"

namespace irdma_sim::device {

struct QpContext {
  uint32_t id = 0;
  uint8_t type = 0;            // CREATE_QP QPTYPE
  uint32_t pd = 0;             // its protection domain: the keys it may use
  uint64_t host_ctx = 0;
  uint64_t sq_base = 0;
  uint64_t rq_base = 0;
  uint32_t sq_quanta = 0;
  uint32_t rq_wqes = 0;
  uint8_t rq_shift = 0;        // RQ WQE = 32 << rq_shift bytes
  uint32_t dest_qp = 0;
  uint32_t qkey = 0;           // UD
  uint32_t send_cq = 0;
  uint32_t recv_cq = 0;
  uint64_t compl_ctx = 0;      // echoed in CQE qword1
  // The device's consumer positions: the SQ's in quanta, the RQ's in WQEs.
  RingPos sq_head;
  RingPos rq_head;
  uint64_t requests = 0;        // non-NOP SQ WQEs carried out
  bool in_error = false;        // executes nothing more; its queues were flushed
  // The event of its error where the flush code alone does not say it: the AMP_* event of
  // the key a protection error met, or a DMA the host refused.
  uint16_t error_ae = 0;
  int64_t fault_at = -1;        // request number that fails (injected), or -1
  uint16_t fault_minor = 0;
};

struct QpEngineCounters {
  uint64_t wqes_executed = 0;
  uint64_t messages = 0;  // SENDs, WRITEs and READs carried out
  uint64_t bytes_moved = 0;
  uint64_t rnr_stalls = 0;
  uint64_t ud_dropped = 0;     // datagrams with no receive posted, or a wrong QKEY
  uint64_t qps_in_error = 0;
  uint64_t flush_cqes = 0;
  uint64_t bad_doorbells = 0;
  uint64_t wqe_errors = 0;
  uint64_t wqe_fetch_errors = 0;  // SQ WQE fetches the host refused (each put its QP in error)
};

class QpEngine {
 public:
  // done: the SQ ran dry; rnr: blocked on an empty peer RQ (retry later); failed: the QP
  // moved to error (its queues flushed).
  enum class Result { done, rnr, failed };

  QpEngine(const DeviceConfig& cfg, DmaPort& dma, EngineTime& time, CqEngine& cqs, AeqEngine& aeq,
           StagTable& stags, Hmc& hmc, trace::TraceLog& trace);
  // Called between WQEs: lets the device serve what must not wait for a whole SQ.
  void set_between_wqes(std::function<void()> hook) { between_wqes_ = std::move(hook); }

  // Loads the QP host context at `host_ctx`; returns a CQP minor code or 0.
  uint16_t create(uint32_t qp_id, uint8_t type, uint64_t host_ctx);
  uint16_t modify(uint32_t qp_id, uint64_t host_ctx);
  uint16_t destroy(uint32_t qp_id);
  bool exists(uint32_t qp_id) const { return qps_.count(qp_id) != 0; }
  // True when some QP uses CQ `cq_id`.
  bool cq_in_use(uint32_t cq_id) const { return cq_users_.count(cq_id) != 0; }

  // Runs the SQ of `qp_id` until it holds no valid WQE (done) or is blocked on an empty
  // peer RQ (rnr: retry later).
  Result process_sq(uint32_t qp_id);
  // Makes request `nth` (counting from 0, NOPs not counted) of QP `qp_id` fail with flush
  // code `minor`: the QP then moves to the error state and its queues are flushed. A
  // test-bench hook, as pre-silicon error injection is. False when there is no such QP, or
  // it carried out that request already.
  bool inject_fault(uint32_t qp_id, uint64_t nth, uint16_t minor);
  // FLUSH_WQES: moves the QP to error and flushes the queues named, the first WQE of each
  // with the minor given. Returns a CQP minor code or 0.
  uint16_t flush(uint32_t qp_id, bool sq, bool rq, uint16_t sq_minor, uint16_t rq_minor);
  // Function level reset: every QP context gone.
  void reset() {
    qps_.clear();
    cq_users_.clear();
  }
  const QpEngineCounters& counters() const { return counters_; }

 private:
  static constexpr unsigned kQuantum = 32;      // bytes: an SQ WQE is 1 to kMaxQuanta of them
  static constexpr unsigned kMaxQuanta = 8;
  static constexpr uint32_t kFetchQuanta = 16;  // 512 bytes: one max read request
  static constexpr uint32_t kChunk = 64 * 1024;  // the bounce buffer's size

  // A WQE's fragments with data (at most 15 slots fit in 8 quanta).
  struct Fragments {
    Extent at[16];
    uint32_t stag[16];  // the key each was given; 0: the global key, `at` is the device address
    unsigned count = 0;
    const Extent* begin() const { return at; }
    const Extent* end() const { return at + count; }
    uint64_t bytes() const {
      uint64_t n = 0;
      for (const Extent& f : *this) n += f.len;
      return n;
    }
  };

  // QP table (qp_engine.cpp).
  uint16_t load_ctx(QpContext& qp);
  void count_cq_users(const QpContext& qp, int delta);

  // WQE fetch and decode (qp_sq_fetch.cpp).
  // SQ quanta [first, first + count), as last read from host memory.
  struct SqWindow {
    uint64_t qwords[kFetchQuanta * kQuantum / 8];
    uint32_t first = 0, count = 0;
    bool holds(uint32_t quantum) const { return quantum >= first && quantum < first + count; }
  };
  // The SQ WQE at the head, decoded.
  struct SqWqe {
    const uint64_t* qwords = nullptr;
    uint8_t op = 0;
    unsigned quanta = 0;
    bool fits = false;  // at most kMaxQuanta, and not past the ring's end
  };
  enum class Fetch { ready, empty, unreadable };
  Fetch fetch_sq_wqe(const QpContext& qp, SqWindow& window, SqWqe& wqe);
  bool load_window(const QpContext& qp, SqWindow& window, uint32_t from);
  static unsigned wqe_quanta(uint64_t hdr);
  // The fragments of an SQ WQE's data: after the immediate's slot when there is one.
  static Fragments sq_fragments(const uint64_t* wqe);
  static Fragments fragments(const uint64_t* wqe, unsigned first_slot, unsigned slots);
  enum class Receive { posted, none, unreadable };
  Receive next_receive(QpContext& peer, Fragments& dst);
  // Turns `f`'s fragments under memory keys into device addresses, checking each key
  // against `qp`'s PD, its bounds and (`device_writes`) LOCAL_WRITE. Returns 0, the flush
  // code the AE table gives a refused key (FLUSH_PROT_ERR, the AE traced), or
  // FLUSH_LOC_LEN_ERR when the pages come to more pieces than a WQE has fragment slots.
  uint16_t resolve(QpContext& qp, Fragments& f, bool device_writes);

  // Execution and completion (qp_execute.cpp).
  // Runs a SEND, RDMA WRITE or RDMA READ against the peer QP.
  Result execute(QpContext& qp, const uint64_t* wqe, uint8_t op);
  Result execute_ud(QpContext& qp, const uint64_t* wqe, uint8_t op);
  bool place_grh(Fragments& receive, uint32_t grh, uint64_t payload, uint32_t reported_by);
  Result execute_atomic(QpContext& qp, const uint64_t* wqe, uint8_t op);
  // A remote access under the WQE's STag: the extents land in remote_ (0 or a flush code).
  uint16_t remote_extents(uint32_t stag, uint64_t va, uint64_t len, RemoteAccess access, uint32_t pd);
  // `reported_by`: the QP whose completion reports the data (the link's faults may poison it).
  uint64_t move_payload(const Extent* src, size_t src_n, const Extent* dst, size_t dst_n, uint32_t reported_by);
  uint8_t receive_opcode(uint8_t sq_op, bool imm) const;
  void complete_rq(QpContext& peer, CqeFields& rq);
  void complete_sq(const QpContext& qp, uint8_t op, uint16_t major, uint16_t minor);

  // Local work requests (qp_memory_keys.cpp).
  // NOP, INV_STAG, FAST_REG_NSMR and BIND_MW: work on this device's own state.
  Result execute_local(QpContext& qp, const uint64_t* wqe, uint8_t op);
  uint16_t fast_register(const uint64_t* wqe);

  // Errors and flushes (qp_flush.cpp). A QP whose own work failed enters error with an
  // asynchronous event for it; FLUSH_WQES's only moves it there.
  Result fail(QpContext& qp, uint16_t minor);
  // A payload the host's memory refused: a local protection error, reported as the QP's
  // own catastrophe (no key was at fault).
  Result payload_dma_failed(QpContext& qp);
  void enter_error(QpContext& qp, uint16_t minor) { enter_error(qp, true, true, minor, minor); }
  void enter_error(QpContext& qp, bool sq, bool rq, uint16_t sq_minor, uint16_t rq_minor);
  void move_to_error(QpContext& qp, bool sq, bool rq, uint16_t sq_minor, uint16_t rq_minor);
  void flush_sq(QpContext& qp, uint16_t minor);
  void flush_rq(QpContext& qp, uint16_t minor);
  void post_flush_cqe(const QpContext& qp, bool sq, uint16_t wqe_idx, uint8_t op, uint16_t minor);

  const DeviceConfig& cfg_;
  DmaPort& dma_;
  EngineTime& time_;
  CqEngine& cqs_;
  AeqEngine& aeq_;
  trace::TraceLog& trace_;
  std::unordered_map<uint32_t, QpContext> qps_;
  std::unordered_map<uint32_t, uint32_t> cq_users_;  // CQ id -> how many QP queues complete on it
  StagTable& stags_;
  Hmc& hmc_;  // FAST_REG_NSMR's page lists
  std::function<void()> between_wqes_;
  std::vector<Extent> remote_;  // reused: the extents of the current remote access
  std::vector<Extent> local_;   // reused: the current local fragments, keys resolved
  std::vector<uint8_t> bounce_ = std::vector<uint8_t>(kChunk);
  QpEngineCounters counters_;
};

}  // namespace irdma_sim::device
