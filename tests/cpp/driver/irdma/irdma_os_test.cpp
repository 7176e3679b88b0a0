// The irdma driver on OS threads (backends::OsExec), probed against a device in plain
// memory: several threads poll, re-arm and post on one CQ while others write its CQEs and
// raise its completion events, and a QP's flush turns into software completions on the
// cleanup worker meanwhile; CQs and QPs are made and destroyed from several threads
// through the shared CQP; a CQ's destroy waits for the event handler using it. Built with
// IRDMA_SIM_TSAN these are the driver's race checks.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "driver/core/cq.h"
#include "driver/irdma/irdma_device.h"
#include "model/device/cqe_format.h"
#include "tests/cpp/driver/irdma/host_platform.h"

namespace {

using namespace irdma;
using namespace ibcore;
using irdma_sim::device::CqeFields;
using irdma_sim::device::TlmCqeFormatter;

constexpr uint32_t kMaxObjects = 64;  // QPs, CQs and MRs the device offers
constexpr uint32_t kCeqs = 2;

template <typename T>
T* at(uint64_t iova) {
  return reinterpret_cast<T*>(uintptr_t(iova));
}

void store(uint64_t& q, uint64_t v, int order = __ATOMIC_RELAXED) { __atomic_store_n(&q, v, order); }

// Just enough of the device for probe and for CQ and QP commands: every CQP command
// completes at its doorbell; CQEs and interrupts come when the test asks. What it writes,
// it writes as the device does: payload first, the valid qword last, after dma_wmb.
class PlainDevice final : public hal::PciConfig, public hal::Bar, public hal::Interrupts {
 public:
  // PCI configuration space: an irdma-sim GEN_2 function.
  uint32_t read(uint32_t offset, unsigned) override {
    switch (offset) {
      case hal::PCI_VENDOR_ID: return 0x1234;
      case hal::PCI_DEVICE_ID: return 0x1D02;
      case hal::PCI_COMMAND: return command_;
      default: return 0;
    }
  }
  void write(uint32_t offset, unsigned, uint32_t value) override {
    if (offset == hal::PCI_COMMAND) command_ = value;
  }

  uint32_t read32(uint64_t offset) override {
    std::lock_guard<std::mutex> guard(m_);
    switch (offset) {
      case IRDMA_GLPE_CPUSTATUS0:
      case IRDMA_GLPE_CPUSTATUS1:
      case IRDMA_GLPE_CPUSTATUS2: return IRDMA_CPU_READY;
      case IRDMA_GLPCI_LBARCTRL: return uint32_t(FIELD_PREP(IRDMA_GLPCI_LBARCTRL_PE_DB_SIZE, IRDMA_PE_DB_SIZE_4M));
      case IRDMA_CCQPSTATUS: return cqp_ctx_ ? IRDMA_CCQPSTATUS_CCQP_DONE : 0;
      case IRDMA_CQPTAIL: return cqp_tail_;
      default: return 0;
    }
  }
  uint64_t read64(uint64_t offset) override { return read32(offset); }
  uint64_t size() const override { return bar0_size; }
  void write64(uint64_t offset, uint64_t value) override { write32(offset, uint32_t(value)); }
  void write32(uint64_t offset, uint32_t value) override {
    std::lock_guard<std::mutex> guard(m_);
    hal::dma_rmb();  // the doorbell: what the driver wrote before it is the device's to read
    switch (offset) {
      case IRDMA_CCQPHIGH: cqp_ctx_hi_ = value; break;
      case IRDMA_CCQPLOW: cqp_ctx_ = uint64_t(cqp_ctx_hi_) << 32 | value; break;
      case IRDMA_CQPDB: run_cqp(value); break;
      case IRDMA_CQARM: cqs_.at(value).armed = true; break;
      case IRDMA_WQEALLOC: doorbells++; break;
      default: break;
    }
  }

  int alloc_irq_vectors(unsigned min, unsigned max) override {
    vectors_ = std::min(max, kCeqs + 1);
    return vectors_ < min ? -ENOSPC : int(vectors_);
  }
  unsigned num_vectors() const override { return vectors_; }
  int request_irq(unsigned vector, Handler handler) override {
    std::lock_guard<std::mutex> guard(irq_[vector].m);
    irq_[vector].handler = std::move(handler);
    return 0;
  }
  void free_irq(unsigned vector) override {
    std::lock_guard<std::mutex> guard(irq_[vector].m);
    irq_[vector].handler = nullptr;
  }
  void free_irq_vectors() override { vectors_ = 0; }

  // Writes one CQE to CQ `cq_num` once the ring has room (the driver publishes its head in
  // the shadow area); an armed CQ then raises its event, on this thread as an interrupt.
  void complete(uint32_t cq_num, const CqeFields& f) {
    int vector = -1;
    for (;; std::this_thread::yield()) {
      std::lock_guard<std::mutex> guard(m_);
      cq_state& cq = cqs_.at(cq_num);
      const uint32_t head = uint32_t(__atomic_load_n(&cq.shadow[0], __ATOMIC_RELAXED));
      if ((cq.tail + cq.size - head) % cq.size + 1 >= cq.size) continue;  // full: wait
      const auto cqe = fmt_.format_main(f, cq.polarity);
      uint64_t* slot = cq.ring + 4ull * cq.tail;
      for (int i = 0; i < 3; i++) store(slot[i], cqe[i]);
      hal::dma_wmb();
      store(slot[3], cqe[3]);
      if (++cq.tail == cq.size) {
        cq.tail = 0;
        cq.polarity = !cq.polarity;
      }
      if (cq.armed) {
        cq.armed = false;
        raise_event(cq);
        vector = int(cq.ceq);
      }
      break;
    }
    if (vector >= 0) interrupt(unsigned(vector));
  }

  // MSI-X: a vector's handler runs on one thread at a time, as an interrupt does.
  void interrupt(unsigned vector) {
    std::lock_guard<std::mutex> guard(irq_[vector].m);
    if (irq_[vector].handler) irq_[vector].handler(vector);
  }

  std::atomic<uint64_t> doorbells{0};
  uint64_t bar0_size = 32ull << 20;

 private:
  struct cq_state {
    uint64_t* ring = nullptr;
    uint64_t* shadow = nullptr;
    uint32_t size = 0, tail = 0, ceq = 0;
    uint64_t ctx = 0;  // as the driver gave it: the CEQE carries it
    bool polarity = true, armed = false;
  };
  struct ceq_state {
    uint64_t* ring = nullptr;
    uint32_t size = 0, tail = 0;
    bool polarity = true;
  };
  struct irq_line {
    std::mutex m;
    Handler handler;
  };

  void raise_event(const cq_state& cq) {
    ceq_state& ceq = ceqs_[cq.ceq];
    hal::dma_wmb();
    store(ceq.ring[ceq.tail], cq.ctx | FIELD_PREP(IRDMA_CEQE_VALID, ceq.polarity));
    if (++ceq.tail == ceq.size) {
      ceq.tail = 0;
      ceq.polarity = !ceq.polarity;
    }
  }

  // Executes the CQP's WQEs up to `head`, each completing on the CCQ once there is one.
  void run_cqp(uint32_t head) {
    const auto* ctx = at<uint64_t>(cqp_ctx_);
    const uint32_t size = 2u << FIELD_GET(IRDMA_CQPHC_SQSIZE, ctx[0]);
    for (; cqp_next_ != head; cqp_next_ = (cqp_next_ + 1) % size) {
      uint64_t* wqe = at<uint64_t>(ctx[1]) + cqp_next_ * (IRDMA_CQP_WQE_SIZE_BYTES / 8);
      const bool by_tail = !ccq_.ring;  // the command creating the CCQ completes so too
      execute(wqe);
      if (by_tail) {
        cqp_tail_ = (cqp_next_ + 1) % size;
        continue;
      }
      CqeFields f;
      f.qp_ctx = ctx[3];
      f.wqe_idx = uint16_t(cqp_next_);
      const auto cqe = fmt_.format_main(f, ccq_.polarity);
      uint64_t* slot = ccq_.ring + 4ull * ccq_.tail;
      for (int i = 0; i < 3; i++) store(slot[i], cqe[i]);
      hal::dma_wmb();
      store(slot[3], cqe[3]);
      if (++ccq_.tail == ccq_.size) {
        ccq_.tail = 0;
        ccq_.polarity = !ccq_.polarity;
      }
    }
  }

  void execute(uint64_t* wqe) {
    const uint64_t hdr = wqe[3];
    switch (FIELD_GET(IRDMA_CQPSQ_OPCODE, hdr)) {
      case IRDMA_CQP_OP_QUERY_FPM_VAL: {
        auto* q = at<uint64_t>(wqe[4]);
        q[0] = FIELD_PREP(IRDMA_QUERY_FPM_MAX_PE_SDS, 64);
        q[1] = FIELD_PREP(IRDMA_QUERY_FPM_MAX_QPS, kMaxObjects);
        q[2] = FIELD_PREP(IRDMA_QUERY_FPM_MAX_CQS, kMaxObjects);
        q[48 / 8] = FIELD_PREP(IRDMA_QUERY_FPM_MAX_CNT, kMaxObjects);
        q[64 / 8] = q[80 / 8] = FIELD_PREP(IRDMA_QUERY_FPM_LOG2_SIZE, 12);
        q[IRDMA_QUERY_FPM_MAX_CEQS_OFFSET / 8] = FIELD_PREP(IRDMA_QUERY_FPM_MAX_CEQS, kCeqs);
        break;
      }
      case IRDMA_CQP_OP_COMMIT_FPM_VAL: {
        auto* q = at<uint64_t>(wqe[4]);
        for (unsigned off : {0u, 8u, 48u, 112u}) q[off / 8] = FIELD_PREP(IRDMA_COMMIT_FPM_CNT, q[off / 8]);
        break;
      }
      case IRDMA_CQP_OP_QUERY_RDMA_FEATURES: {
        auto* f = at<uint64_t>(wqe[4]);
        f[0] = FIELD_PREP(IRDMA_FEATURE_CNT, 2) | FIELD_PREP(IRDMA_FEATURE_TYPE, IRDMA_FEATURE_FW_INFO);
        f[1] = FIELD_PREP(IRDMA_FEATURE_TYPE, IRDMA_SIM_FEATURE_MAX_CQE) | FIELD_PREP(IRDMA_FEATURE_INFO, 4095);
        break;
      }
      case IRDMA_CQP_OP_CREATE_CQ: {
        const auto id = uint32_t(FIELD_GET(IRDMA_CQPSQ_CQ_CQID, hdr));
        cq_state& cq = id ? cqs_[id] : ccq_;
        cq = {at<uint64_t>(wqe[4]), at<uint64_t>(wqe[5]), uint32_t(wqe[0]), 0,
              uint32_t(FIELD_GET(IRDMA_CQPSQ_CQ_CEQID, hdr)), FIELD_GET(IRDMA_CQPSQ_CQ_CQCTX, wqe[1])};
        break;
      }
      case IRDMA_CQP_OP_DESTROY_CQ: cqs_.erase(uint32_t(FIELD_GET(IRDMA_CQPSQ_CQ_CQID, hdr))); break;
      case IRDMA_CQP_OP_CREATE_CEQ: {
        ceq_state& ceq = ceqs_[uint32_t(FIELD_GET(IRDMA_CQPSQ_CEQ_CEQID, hdr))];
        ceq = {at<uint64_t>(wqe[4]), uint32_t(FIELD_GET(IRDMA_CQPSQ_CEQ_CEQSIZE, wqe[2]))};
        break;
      }
      default: break;  // QPs, flushes, the AEQ: nothing to keep
    }
  }

  uint32_t command_ = 0, vectors_ = 0;
  std::mutex m_;  // the device's state below; interrupts are raised outside it
  uint32_t cqp_ctx_hi_ = 0, cqp_tail_ = 0, cqp_next_ = 0;
  uint64_t cqp_ctx_ = 0;
  cq_state ccq_;
  std::map<uint32_t, cq_state> cqs_;
  std::map<uint32_t, ceq_state> ceqs_;
  irq_line irq_[kCeqs + 1];
  TlmCqeFormatter fmt_;
};

struct Host {
  irdma_sim::testing::HeapDma dma;
  PlainDevice device;
  std::unique_ptr<backends::OsExec> exec = std::make_unique<backends::OsExec>();
  hal::Platform hw{device, device, dma, device, *exec};
  std::unique_ptr<irdma_device> dev = std::make_unique<irdma_device>(hw);

  Host() { EXPECT_EQ(dev->probe(), 0) << dev->probe_error(); }
  ~Host() {
    EXPECT_EQ(dev->remove(), 0);
    dev.reset();
    exec.reset();  // joins the workers
  }
  irdma_cq* create_cq(int entries) {
    auto cq = ib_alloc_cq(dev.get(), nullptr, entries, 0, IB_POLL_DIRECT);
    EXPECT_FALSE(cq.is_err());
    return static_cast<irdma_cq*>(cq.get());
  }
  irdma_qp* create_qp(irdma_cq* cq, uint32_t depth) {
    ib_qp_init_attr attr;
    attr.send_cq = attr.recv_cq = cq;
    attr.cap.max_send_wr = attr.cap.max_recv_wr = depth;
    auto qp = dev->create_qp(attr);
    EXPECT_FALSE(qp.is_err());
    return qp.get();
  }
};

// What every poller sees, by wr_id.
struct Seen {
  std::mutex m;
  std::map<uint64_t, std::vector<ib_wc_status>> by_wr;
  void add(const ib_wc* wc, int n) {
    std::lock_guard<std::mutex> guard(m);
    for (int i = 0; i < n; i++) by_wr[wc[i].wr_id].push_back(wc[i].status);
  }
  size_t count() {
    std::lock_guard<std::mutex> guard(m);
    return by_wr.size();
  }
};

CqeFields completion(const irdma_qp* qp, bool sq, uint32_t wqe_idx) {
  CqeFields f;
  f.qp_ctx = qp->qp_uk.compl_ctx;
  f.qp_id = qp->qp_num;
  f.sq = sq;
  f.wqe_idx = uint16_t(wqe_idx);
  f.payload_len = 64;
  f.op = sq ? IRDMA_OP_TYPE_SEND : 0x04;
  return f;
}

uint32_t cq_num(ib_cq* cq) { return static_cast<irdma_cq*>(cq)->cq_num; }

// Posts `n` sends (or receives) on one queue, each completed by the device right away but
// for the last `unfinished`: those are left to someone else (the flush, or a device thread
// that reads the queue). wr_ids start at `first`. A thread that has the device complete
// its posts must be the queue's only poster.
void post_queue(Host& h, PlainDevice& device, irdma_qp* qp, bool sq, uint64_t first, int n, int unfinished) {
  for (int i = 0; i < n; i++) {
    const uint64_t wr_id = first + uint64_t(i);
    const bool complete = i < n - unfinished;
    uint32_t idx = 0;
    for (;;) {  // a full queue waits for the pollers
      if (complete) idx = sq ? qp->qp_uk.sq_ring.head : qp->qp_uk.rq_ring.head;
      ib_sge sge{0x1000, 64, 0};
      int ret;
      if (sq) {
        ib_send_wr wr;
        wr.wr_id = wr_id;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.send_flags = IB_SEND_SIGNALED;
        ret = h.dev->post_send(qp, &wr, nullptr);
      } else {
        ib_recv_wr wr;
        wr.wr_id = wr_id;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        ret = h.dev->post_recv(qp, &wr, nullptr);
      }
      if (ret == 0) break;
      ASSERT_EQ(ret, -ENOMEM);
      std::this_thread::yield();
    }
    if (complete) device.complete(cq_num(sq ? qp->send_cq : qp->recv_cq), completion(qp, sq, idx));
  }
}

// The device's side of a send queue: executes `n` one-quantum WQEs in ring order as their
// valid bits appear, completing each.
void execute_sq(PlainDevice& device, const irdma_qp* qp, int n) {
  const uint32_t size = qp->qp_uk.sq_ring.size;
  uint32_t idx = 0;
  uint8_t polarity = 1;
  for (int done = 0; done < n;) {
    const uint64_t hdr = __atomic_load_n(&qp->qp_uk.sq_base[4 * idx + 3], __ATOMIC_RELAXED);
    if (FIELD_GET(IRDMAQPSQ_VALID, hdr) != polarity) {
      std::this_thread::yield();
      continue;
    }
    hal::dma_rmb();
    device.complete(cq_num(qp->send_cq), completion(qp, true, idx));
    done++;
    if (++idx == size) {
      idx = 0;
      polarity ^= 1;
    }
  }
}

TEST(IrdmaOnOsThreads, ABar0TooSmallForTheRegistersFailsTheProbeSayingSo) {
  irdma_sim::testing::HeapDma dma;
  PlainDevice device;
  device.bar0_size = 128 << 10;  // an e1000e's
  backends::OsExec exec;
  hal::Platform hw{device, device, dma, device, exec};
  irdma_device dev(hw);
  EXPECT_EQ(dev.probe(), -ENODEV);
  EXPECT_EQ(dev.probe_error(), "PCI function 1234:1d02 has a BAR0 of 131072 bytes; irdma's registers need 5290600: "
                               "not the function expected");
  EXPECT_EQ(device.doorbells.load(), 0u);
}

// Pollers, re-arming, posters and the device on one CQ; one of its QPs flushed meanwhile:
// every work request completes exactly once, flushed ones as flushes, and the handler runs.
TEST(IrdmaOnOsThreads, PollNotifyPostAndFlushOnOneCq) {
  Host h;
  irdma_cq* cq = h.create_cq(128);
  std::atomic<int> events{0};
  cq->comp_handler = [&](ib_cq*) { events++; };
  irdma_qp* a = h.create_qp(cq, 64);
  irdma_qp* b = h.create_qp(cq, 64);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(ib_req_notify_cq(cq, IB_CQ_NEXT_COMP), 0);

  constexpr int kPerQueue = 3000;
  // b's sends: some the device completes, kUnfinished it never sees before the flush, then
  // kBursts of 20 posted after it, each left to the flush work (which runs 20 ms after the
  // last post).
  constexpr int kBeforeFlush = 1000, kUnfinished = 40, kBursts = 8;
  constexpr uint64_t kFirstB = 3'000'000;
  constexpr size_t kTotal = 2 * kPerQueue + kBeforeFlush + 20 * kBursts;
  Seen seen;
  std::atomic<bool> done{false};
  std::vector<std::thread> pollers;
  for (int t = 0; t < 3; t++) {
    pollers.emplace_back([&, t] {
      ib_wc wc[IB_POLL_BATCH];
      for (unsigned spin = 0; !done; spin++) {
        const int n = ib_poll_cq(cq, t == 0 ? IB_POLL_BATCH : 4, wc);
        ASSERT_GE(n, 0);
        seen.add(wc, n);
        if (n == 0 && spin % 8 == 0) ib_req_notify_cq(cq, IB_CQ_NEXT_COMP | IB_CQ_REPORT_MISSED_EVENTS);
        if (n == 0) std::this_thread::yield();
      }
    });
  }
  // QP a's SQ from two threads, the device executing it in order, and its RQ from a third
  // (one QP lock); QP b's SQ, flushed partway.
  std::thread a_sq1([&] { post_queue(h, h.device, a, true, 1'000'000, kPerQueue / 2, kPerQueue / 2); });
  std::thread a_sq2([&] { post_queue(h, h.device, a, true, 1'500'000, kPerQueue / 2, kPerQueue / 2); });
  std::thread a_exec([&] { execute_sq(h.device, a, kPerQueue); });
  std::thread a_rq([&] { post_queue(h, h.device, a, false, 2'000'000, kPerQueue, 0); });
  std::thread b_sq([&] {
    post_queue(h, h.device, b, true, kFirstB, kBeforeFlush, kUnfinished);
    EXPECT_EQ(h.dev->flush_qp(b), 0);
    for (int i = 0; i < kBursts; i++) {
      post_queue(h, h.device, b, true, kFirstB + kBeforeFlush + 20u * i, 20, 20);
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
    }
  });
  for (std::thread* t : {&a_sq1, &a_sq2, &a_exec, &a_rq, &b_sq}) t->join();
  for (int wait = 0; seen.count() < kTotal && wait < 10'000; wait++)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  done = true;
  for (std::thread& t : pollers) t.join();

  ASSERT_EQ(seen.count(), kTotal);
  size_t flushed = 0;
  for (const auto& [wr_id, statuses] : seen.by_wr) {
    ASSERT_EQ(statuses.size(), 1u) << "wr_id " << wr_id << " completed more than once";
    const bool b_flushed = wr_id >= kFirstB + kBeforeFlush - kUnfinished;
    EXPECT_EQ(statuses[0], b_flushed ? IB_WC_WR_FLUSH_ERR : IB_WC_SUCCESS) << wr_id;
    flushed += statuses[0] == IB_WC_WR_FLUSH_ERR;
  }
  EXPECT_EQ(flushed, size_t(kUnfinished + 20 * kBursts));
  EXPECT_EQ(cq->sc_cq.corrupt_cqes, 0u);
  EXPECT_EQ(h.dev->destroy_qp(a), 0);
  EXPECT_EQ(h.dev->destroy_qp(b), 0);
  EXPECT_EQ(ib_free_cq(cq), 0);
  // Freeing the CQ waits for the event handler using it: every counted call has run.
  EXPECT_GT(h.dev->event_counters().comp_events, 0u) << "the device raised events";
  EXPECT_GE(uint64_t(events.load()), h.dev->event_counters().comp_events);
}

// Software completions notify as irdma_comp_handler does: an armed CQ's handler runs once
// and the CQ is disarmed, so a second flush's completions raise nothing until it is armed
// again.
TEST(IrdmaOnOsThreads, FlushCompletionsNotifyAnArmedCqOnceAndDisarmIt) {
  Host h;
  irdma_cq* cq = h.create_cq(64);
  std::atomic<int> events{0};
  cq->comp_handler = [&](ib_cq*) { events++; };
  irdma_qp* a = h.create_qp(cq, 8);
  irdma_qp* b = h.create_qp(cq, 8);
  post_queue(h, h.device, a, false, 100, 3, 3);  // never seen by the device
  post_queue(h, h.device, b, false, 200, 2, 2);
  ASSERT_EQ(ib_req_notify_cq(cq, IB_CQ_NEXT_COMP), 0);
  ASSERT_EQ(h.dev->flush_qp(a), 0);
  ib_wc wc[8];
  int got = 0;
  for (int wait = 0; got < 3 && wait < 5000; wait++) {
    got += ib_poll_cq(cq, 8, wc + got);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(got, 3);
  // The flush work calls the handler after it unlocks the CQ, so a poller can see the
  // completions first.
  for (int wait = 0; events.load() == 0 && wait < 5000; wait++)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(events.load(), 1);
  EXPECT_FALSE(cq->armed) << "the notification consumed the arm";
  ASSERT_EQ(h.dev->flush_qp(b), 0);
  for (int wait = 0; got < 5 && wait < 5000; wait++) {
    got += ib_poll_cq(cq, 8, wc + got);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(got, 5);
  for (int i = 0; i < got; i++) EXPECT_EQ(wc[i].status, IB_WC_WR_FLUSH_ERR);
  // Destroying the QPs waits for their flush work, handler calls included.
  EXPECT_EQ(h.dev->destroy_qp(a), 0);
  EXPECT_EQ(h.dev->destroy_qp(b), 0);
  EXPECT_EQ(events.load(), 1) << "not armed: no second notification";
  EXPECT_EQ(ib_free_cq(cq), 0);
}

// CQs and QPs made and destroyed from several threads at once: the CQP ring, its
// completion slots and the id tables are shared; every command completes and every id
// comes back.
TEST(IrdmaOnOsThreads, CreateAndDestroyThroughOneCqpFromManyThreads) {
  Host h;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; i++) {
        irdma_cq* cq = h.create_cq(16);
        if (!cq) {
          failures++;
          continue;
        }
        irdma_qp* qp = h.create_qp(cq, 8);
        if (!qp || h.dev->destroy_qp(qp) != 0) failures++;
        if (ib_free_cq(cq) != 0) failures++;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  // Every id was given back: the device's whole CQ space can be had again.
  std::vector<irdma_cq*> all;
  for (uint32_t i = 3; i < kMaxObjects; i++) all.push_back(h.create_cq(4));
  for (irdma_cq* cq : all) {
    if (cq) {
      EXPECT_EQ(ib_free_cq(cq), 0);
    }
  }
}

// irdma_cq_rem_ref / wait_for_completion: a CQ's destroy waits while the CEQ handler that
// took it from the table is still in its comp_handler.
TEST(IrdmaOnOsThreads, DestroyCqWaitsForTheHandlerUsingIt) {
  Host h;
  irdma_cq* cq = h.create_cq(16);
  irdma_qp* qp = h.create_qp(cq, 8);
  std::atomic<bool> inside{false}, release{false};
  cq->comp_handler = [&](ib_cq*) {
    inside = true;
    while (!release) std::this_thread::yield();
  };
  ASSERT_EQ(ib_req_notify_cq(cq, IB_CQ_NEXT_COMP), 0);
  std::thread irq([&] { post_queue(h, h.device, qp, false, 1, 1, 0); });
  while (!inside) std::this_thread::yield();
  ib_wc wc[4];
  EXPECT_EQ(ib_poll_cq(cq, 4, wc), 1) << "the handler holds no CQ lock";
  ASSERT_EQ(h.dev->destroy_qp(qp), 0);
  std::atomic<bool> destroyed{false};
  std::thread destroyer([&] {
    EXPECT_EQ(h.dev->destroy_cq(cq), 0);
    destroyed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(destroyed) << "the handler still uses the CQ";
  release = true;
  irq.join();
  destroyer.join();
  EXPECT_TRUE(destroyed);
}

}  // namespace
