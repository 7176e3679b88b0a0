// Step-by-step driving of a host's device, for scripts and notebooks (Python's Session,
// on the in-process simulation): take CQs from the pool, make loopback QP pairs, post,
// poll, read counters. Every call runs the driver on the host's CPU 0 until it returns.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "driver/core/ib_verbs.h"
#include "model/testbench/buffered_qp.h"
#include "model/testbench/host.h"
#include "model/testbench/sim_config.h"

namespace irdma_sim::testbench {


// Raised for driver and pool errors, with Linux's errno.
class VerbsError : public std::runtime_error {
 public:
  VerbsError(const std::string& what, int err) : std::runtime_error(what), err_(err) {}
  int err() const { return err_; }

 private:
  int err_;
};

struct PolledCompletion {
  uint64_t wr_id;
  uint32_t cq;
  uint32_t qp_num;
  ibcore::ib_wc wc;
  std::string data;  // a successful receive's bytes
};

class HostSession {
 public:
  // Drives `host` (the in-process simulation, or any other Host).
  explicit HostSession(std::unique_ptr<Host> host);
  ~HostSession();

  // Returns the CQ's number; throws VerbsError.
  uint32_t pool_get(unsigned nr_cqe, int comp_vector, ibcore::ib_poll_context ctx);
  // Returns what one pool_get of this CQ took (EINVAL: no get took `nr_cqe`); the last of
  // them while QPs still use the CQ is refused (EBUSY). The CQ is the session's no more
  // once every get is put back.
  void pool_put(uint32_t cq, unsigned nr_cqe);
  // A CQ of the session's own (ib_alloc_cq, polled by the session), which may be resized.
  uint32_t alloc_cq(int nr_cqe, unsigned comp_vector);
  // ib_free_cq of a CQ alloc_cq made: EBUSY while QPs use it, EINVAL for a pool CQ
  // (pool_put it instead).
  void free_cq(uint32_t cq);
  void resize_cq(uint32_t cq, int nr_cqe);
  // ib_req_notify_cq; returns its result (1: a completion may have been missed).
  int req_notify_cq(uint32_t cq, unsigned flags);
  // What reached the CQ's handlers: completion events, and IB_EVENT_CQ_ERR.
  std::map<std::string, uint64_t> cq_events(uint32_t cq);
  void set_pool_policy(ibcore::cq_pool_policy policy);
  // Two connected RC QPs on CQs `cq_a` and `cq_b`; returns their QP numbers. Each holds
  // at least `sq_depth` sends and `rq_depth` receives (qp_cap says how many): a post past
  // that fails with ENOMEM and writes nothing.
  std::pair<uint32_t, uint32_t> create_qp_pair(uint32_t cq_a, uint32_t cq_b, uint32_t sq_depth,
                                               uint32_t rq_depth, uint32_t max_msg_bytes);
  // What the driver made of a QP's depths (ib_qp_cap): max_send_wr, max_recv_wr.
  ibcore::ib_qp_cap qp_cap(uint32_t qp);
  void destroy_qp(uint32_t qp);
  // Returns the work request's id.
  // `invalidate`: a SEND_WITH_INV carrying this rkey (not with `imm`).
  uint64_t post_send(uint32_t qp, const std::string& data, std::optional<uint32_t> imm,
                     bool signaled, bool solicited, std::optional<uint32_t> invalidate = {});
  uint64_t post_recv(uint32_t qp);
  // RDMA WRITE of `data` into slot `window_slot` of the peer's window (with immediate data:
  // it consumes a receive there); RDMA READ of `length` bytes from it.
  uint64_t post_write(uint32_t qp, const std::string& data, uint32_t window_slot,
                      std::optional<uint32_t> imm, bool signaled);
  uint64_t post_read(uint32_t qp, uint32_t length, uint32_t window_slot, bool signaled);
  // An atomic on the 8 bytes at the peer's window slot: fetch-and-add, or compare-and-swap
  // (compare, swap); the completion carries the original value.
  uint64_t post_atomic(uint32_t qp, uint32_t window_slot, std::optional<uint64_t> fetch_add,
                       std::optional<std::pair<uint64_t, uint64_t>> compare_swap, bool signaled);
  // Makes request `nth` of QP `qp` (counting SQ work requests from 0) fail with flush code
  // `flush_minor` (spec G.5, 1-11): the QP moves to error and its queues are flushed. A
  // request already posted, or an unknown code, is refused (EINVAL).
  void inject_fault(uint32_t qp, uint64_t nth, uint16_t flush_minor);
  // The bytes of a QP's window slot, and setting them.
  std::string window(uint32_t qp, uint32_t window_slot, uint32_t length);
  void set_window(uint32_t qp, uint32_t window_slot, const std::string& data);
  std::vector<PolledCompletion> poll(uint32_t cq, int max_entries);
  // Lets simulated time pass (the device works meanwhile).
  void run_for_ns(uint64_t ns);
  uint64_t now_ps() const;
  std::map<std::string, uint64_t> counters() const;
  // Frees every QP and pool CQ and stops the driver; the session is unusable after.
  void shutdown();
  // Recovery from a device given up (IB_EVENT_DEVICE_FATAL: a reset, a CQP timeout, a PCIe
  // error): every QP and CQ of the session destroyed, their unpolled completions with them,
  // the function reset and the driver probed again (Host::reprobe); the session goes on
  // with new objects, the driver's counters from 0. Throws VerbsError when a teardown step or the probe fails
  // (the session is then shut down).
  void recover();

  // For layers over the session (raw_verbs.h): the simulated system and a session CQ.
  Host& host() { return *host_; }
  ibcore::ib_cq* cq(uint32_t cq_num);

 private:
  // A work request outstanding on a queue, in posting order, and the buffer slot it holds
  // until its completion (or a later send's, for an unsignaled one) is polled.
  struct Posted {
    uint64_t wr_id;
    uint32_t slot;
    uint32_t fetched = 0;  // bytes a READ or an atomic brings back into the slot
  };
  struct Queue {
    std::deque<Posted> posted;
    std::vector<uint32_t> free;  // slots
    // Takes a free slot; throws VerbsError(ENOMEM) when none is left.
    uint32_t take(uint32_t qp_num, const char* queue);
    // Retires everything posted up to and including `wr_id`; the retired entry, if any.
    std::optional<Posted> retire(uint64_t wr_id);
  };
  struct Qp {
    std::unique_ptr<BufferedQp> bq;
    uint32_t peer = 0;
    Queue sq, rq;
    uint64_t requests = 0;  // SQ work requests posted
  };
  Qp& qp(uint32_t qp_num);
  std::pair<int, std::string> tear_down();
  // Posts `wr` on `q`, its data in a free send slot; returns the wr_id.
  uint64_t post(Qp& q, ibcore::ib_send_wr& wr, const std::string& data, uint32_t length);
  BufferedQp& window_owner(uint32_t qp_num, uint32_t window_slot, uint64_t length);

  std::unique_ptr<Host> host_;
  std::map<uint32_t, ibcore::ib_cq*> cqs_;
  struct CqEvents {
    uint64_t completion = 0, error = 0;
    bool own = false;
  };
  std::map<uint32_t, CqEvents> cq_events_;
  std::map<uint32_t, std::vector<unsigned>> pool_gets_;  // pool CQ -> what each get took
  // Counts the CQ's events instead of consuming its completions: the session polls.
  void watch(ibcore::ib_cq* c, uint32_t num, bool own);
  std::map<uint32_t, Qp> qps_;
  uint64_t next_wr_id_ = 1;
  uint64_t completions_delivered_ = 0;  // by poll(), as report.json's completions_delivered
  bool down_ = false;
};

}  // namespace irdma_sim::testbench
