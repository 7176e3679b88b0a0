// The workload's own records, shared by its parts (workload.h declares them): one per QP,
// one per work request in flight, one per message on its way to a receive queue.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

#include "model/testbench/buffered_qp.h"
#include "model/testbench/fifo.h"
#include "model/testbench/workload.h"

namespace irdma_sim::testbench {

// Records by slot that cost memory only where a slot is used: calloc of a large block is a
// fresh mapping whose pages the kernel zero-fills on first touch (a deep queue's records are
// mostly never touched). T's all-zero bytes must be its default value.
template <typename T>
class ZeroFilledArray {
  static_assert(std::is_aggregate_v<T> && std::is_trivially_destructible_v<T>);

 public:
  void resize(size_t n) {
    data_.reset(static_cast<T*>(std::calloc(n, sizeof(T))));
    if (n && !data_) throw std::bad_alloc();
    size_ = n;
  }
  T& operator[](size_t i) { return data_.get()[i]; }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
  size_t size_ = 0;
};

// Ops whose message takes a receive at the peer.
inline bool consumes_receive(TrafficOp op) { return op == TrafficOp::send || op == TrafficOp::write_imm; }

struct Workload::WrCtx {
  ibcore::ib_cqe cqe;  // first: ib_wc::wr_cqe points here
  Workload* wl = nullptr;
  Qp* qp = nullptr;
  uint64_t wr_id = 0;
  uint32_t slot = 0;
  uint64_t seq = 0;  // the send's number on its QP
  TrafficOp op = TrafficOp::send;
  uint32_t len = 0;
  uint64_t original = 0, after = 0;  // atomics: the value returned, the value left behind
  bool signaled = false;
  uint64_t posted_ps = 0;  // when the workload posted it
};
// Kept in ZeroFilledArrays: zero bytes must read as the defaults above.
static_assert(TrafficOp{} == TrafficOp::send);

// A message on its way to a QP's receive queue: a SEND or a WRITE with immediate data.
struct Workload::Incoming {
  uint64_t seq;  // its number at the sender
  TrafficOp op;
  uint32_t len;
};

struct Workload::Qp {
  unsigned index = 0;
  Qp* peer = nullptr;
  const std::vector<TrafficOp>* ops = nullptr;  // its op cycle
  bool ud = false;
  uint32_t qkey = 0;  // UD: what this QP accepts
  std::unique_ptr<BufferedQp> bq;
  ibcore::ib_cq* cq = nullptr;
  // The device's numbers for them, kept: a completion may outlive its QP's destruction.
  uint32_t qp_num = 0, cq_num = 0;
  uint32_t nr_cqe = 0;
  ZeroFilledArray<WrCtx> send_ctx, recv_ctx;
  Fifo<Incoming> incoming;
  // Of those, the WRITE_WITH_IMMs (their numbers at the sender): their bytes are checked in
  // this QP's window when their receive completes, so the sender writes no other message
  // over them until then.
  Fifo<uint64_t> writes_to_check;
  bool rq_error = false;  // a receive completed in error: nothing on its way arrives any more
  std::vector<uint64_t> atomic_values;  // of the peer's atomic slots, as this QP leaves them
  uint64_t sends_total = 0, sends_posted = 0, sends_done = 0;
  uint64_t recvs_total = 0, recvs_posted = 0, recvs_done = 0;
  bool done = false;  // every send and receive completed (Workload::unfinished_ counts the rest)
  // An error completion broke the connection: the workload moves the peer to error too,
  // as a ULP tearing the connection down does.
  bool broken = false, peer_flushed = false;
  uint64_t idle_until_ns = 0;  // after a burst (traffic.burst)
  bool own_cq = false;         // ib_alloc_cq'd, not from the pool
  bool cq_error = false, torn_down = false;  // its CQ reported IB_EVENT_CQ_ERR; the pair is gone
  uint64_t completions = 0, resized_at = 0;  // completions seen, and at the last resize
  size_t resizes = 0;
  // A region over the peer's window and a window over that region, when the ops use them;
  // `rkey` is what RDMA requests name: the window, the region, or the global key 0.
  irdma::irdma_mr* mr = nullptr;
  irdma::irdma_mw* mw = nullptr;
  bool mr_registered = false;
  uint32_t rkey = 0;
};

template <typename Call>
decltype(auto) Workload::unlocked(Call&& call) {
  lock_->unlock();
  struct Relock {
    hal::Lock& lock;
    ~Relock() { lock.lock(); }
  } relock{*lock_};
  return call();
}

}  // namespace irdma_sim::testbench
