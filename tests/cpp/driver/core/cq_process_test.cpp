// ib-core's completion processing (spec A.4, H 9-10): budgets, batches, completions with
// and without a consumer, a driver error mid-way; the poll contexts' budget rule
// (softirq 256, workqueues 65536: a spent budget polls again without re-arming); and
// softirqs run as an interrupt handler returns, where the platform runs them so; on OS
// threads against a scripted device.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "driver/core/cq.h"
#include "driver/core/cq_poll.h"
#include "driver/backends/os_exec.h"

namespace {

using namespace ibcore;

// A device whose CQ hands out a script of completions, recording every poll_cq's request.
struct ScriptedDevice final : ib_device {
  ib_cqe consumer{&on_done};
  static std::atomic<uint64_t> done;
  static void on_done(ib_cq*, ib_wc*) { done++; }

  std::atomic<int> ready{0};          // successful completions with a consumer
  std::deque<ib_wc> special;          // handed out first
  int fail_after_calls = -1;          // poll_cq returns -EIO from this call on
  std::vector<int> requests;          // num_entries of every poll_cq
  std::atomic<int> rearms{0};
  std::vector<std::string> warned;

  ScriptedDevice() {
    warnings.sink = [this](const std::string& w) { warned.push_back(w); };
  }
  ib_cq* create_cq(const ib_cq_init_attr&, int& err) override {
    err = -EOPNOTSUPP;
    return nullptr;
  }
  int destroy_cq(ib_cq*) override { return 0; }
  int poll_cq(ib_cq*, int n, ib_wc* wc) override {
    requests.push_back(n);
    if (fail_after_calls >= 0 && int(requests.size()) > fail_after_calls) return -EIO;
    int got = 0;
    for (; got < n && !special.empty(); got++) {
      wc[got] = special.front();
      special.pop_front();
    }
    for (; got < n && ready > 0; got++, ready--) {
      wc[got] = ib_wc{};
      wc[got].wr_cqe = &consumer;
    }
    return got;
  }
  int req_notify_cq(ib_cq*, unsigned) override {
    rearms++;
    return 0;
  }
};
std::atomic<uint64_t> ScriptedDevice::done{0};

// Waits (up to 5 s) until `d` handed out `completions` and was re-armed.
void wait_until_polled(const ScriptedDevice& d, uint64_t completions) {
  for (int spin = 0; (ScriptedDevice::done < completions || d.rearms == 0) && spin < 5000; spin++)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

struct ProcessCq : ::testing::Test {
  ScriptedDevice dev;
  ib_cq cq;
  ProcessCq() {
    cq.device = &dev;
    ScriptedDevice::done = 0;
  }
};

TEST_F(ProcessCq, UnboundedBudgetPollsInBatchesUntilAShortOne) {
  dev.ready = 100;
  EXPECT_EQ(ib_process_cq_direct(&cq, -1), 100);
  EXPECT_EQ(dev.requests, std::vector<int>(13, IB_POLL_BATCH_DIRECT)) << "12 full batches, then 4 of 8";
  EXPECT_EQ(ScriptedDevice::done.load(), 100u);
}

TEST_F(ProcessCq, AShortBatchEndsTheRunEvenIfMoreArriveLater) {
  dev.ready = 20;
  EXPECT_EQ(ib_process_cq_direct(&cq, -1), 20);
  EXPECT_EQ(dev.requests.size(), 3u);
  dev.ready = 5;  // not polled until the next run
  EXPECT_EQ(dev.requests.size(), 3u);
  EXPECT_EQ(ib_process_cq_direct(&cq, -1), 5);
}

TEST_F(ProcessCq, TheBudgetCapsTheLastBatch) {
  dev.ready = 100;
  EXPECT_EQ(ib_process_cq_direct(&cq, 10), 10);
  EXPECT_EQ(dev.requests, (std::vector<int>{8, 2}));
  EXPECT_EQ(dev.ready.load(), 90);
}

TEST_F(ProcessCq, ASuccessWithoutAConsumerWarnsAnErrorWithoutOneIsDropped) {
  ib_wc success{};
  ib_wc error{};
  error.status = IB_WC_WR_FLUSH_ERR;
  dev.special = {success, error};
  EXPECT_EQ(ib_process_cq_direct(&cq, -1), 2) << "both count as processed";
  ASSERT_EQ(dev.warned.size(), 1u);
  EXPECT_NE(dev.warned[0].find("without a wr_cqe"), std::string::npos);
  EXPECT_EQ(ScriptedDevice::done.load(), 0u);
}

TEST_F(ProcessCq, ADriverErrorEndsTheRunWithTheCountSoFar) {
  dev.ready = 100;
  dev.fail_after_calls = 2;
  EXPECT_EQ(ib_process_cq_direct(&cq, -1), 16);
  EXPECT_EQ(dev.requests.size(), 3u);
}

// Softirq polls 256 a run; a spent budget means another run without re-arming. Workqueues
// poll 65536. Each ends with one re-arm once a run comes up short.
TEST_F(ProcessCq, PollContextsSpendTheirBudgetThenReArm) {
  struct Case {
    ib_poll_context ctx;
    int ready;
    uint64_t runs, spent;
  };
  for (const Case& c : {Case{IB_POLL_SOFTIRQ, 600, 3, 2}, Case{IB_POLL_WORKQUEUE, 70000, 2, 1},
                        Case{IB_POLL_UNBOUND_WORKQUEUE, 65536, 2, 1}}) {
    SCOPED_TRACE(int(c.ctx));
    ScriptedDevice d;
    ib_cq q;
    q.device = &d;
    q.poll_ctx = c.ctx;
    d.ready = c.ready;
    ScriptedDevice::done = 0;
    auto exec = std::make_unique<backends::OsExec>();
    auto workers = std::make_unique<ib_poll_workers>(*exec);
    workers->schedule(&q);
    wait_until_polled(d, uint64_t(c.ready));
    workers->stop();
    const ib_poll_counters n = workers->counters();
    exec.reset();
    EXPECT_EQ(ScriptedDevice::done.load(), uint64_t(c.ready));
    EXPECT_EQ(n.runs, c.runs);
    EXPECT_EQ(n.budget_spent, c.spent);
    EXPECT_EQ(n.rearms, 1u);
    EXPECT_EQ(d.rearms.load(), 1);
    EXPECT_EQ(d.requests.front(), IB_POLL_BATCH);
  }
}

// OS threads whose platform runs softirqs at irq exit, as Linux's does.
class IrqExitExec final : public hal::Exec {
 public:
  uint64_t now_ns() override { return os_.now_ns(); }
  void cpu_relax() override { os_.cpu_relax(); }
  void delay_ns(uint64_t ns) override { os_.delay_ns(ns); }
  void spawn(const std::string& name, unsigned cpu, std::function<void()> body) override {
    os_.spawn(name, cpu, std::move(body));
  }
  std::unique_ptr<hal::Event> make_event() override { return os_.make_event(); }
  std::unique_ptr<hal::Lock> make_lock() override { return os_.make_lock(); }
  unsigned num_cpus() const override { return os_.num_cpus(); }
  bool softirqs_at_irq_exit() const override { return true; }

 private:
  backends::OsExec os_;
};

struct SoftirqAtIrqExit : ProcessCq {
  IrqExitExec exec;
  std::unique_ptr<ib_poll_workers> workers = std::make_unique<ib_poll_workers>(exec);
  // Waits for the workers to finish what they were handed, stops them, returns the counters.
  ib_poll_counters finish(uint64_t completions) {
    wait_until_polled(dev, completions);
    workers->stop();
    return workers->counters();
  }
};

TEST_F(SoftirqAtIrqExit, ASoftirqCqRaisedByAnInterruptIsPolledAsItsHandlerReturnsOnItsThread) {
  cq.poll_ctx = IB_POLL_SOFTIRQ;
  dev.ready = 100;
  uint64_t done_in_handler = ~0ull;
  workers->hardirq([&] {
    workers->schedule(&cq);
    done_in_handler = ScriptedDevice::done;
  });
  EXPECT_EQ(done_in_handler, 0u) << "not polled inside the hard interrupt";
  EXPECT_EQ(ScriptedDevice::done.load(), 100u) << "polled before hardirq() returned";
  EXPECT_EQ(dev.rearms.load(), 1);
  const ib_poll_counters n = finish(100);
  EXPECT_EQ(n.runs, 1u);
  EXPECT_EQ(n.at_irq_exit, 1u);
}

// A CQ that keeps spending its budget is polled for ten rounds, then ksoftirqd takes it.
TEST_F(SoftirqAtIrqExit, ACqStillBusyAfterTenRoundsGoesToKsoftirqd) {
  cq.poll_ctx = IB_POLL_SOFTIRQ;
  dev.ready = 12 * IB_POLL_BUDGET_IRQ;
  workers->hardirq([&] { workers->schedule(&cq); });
  EXPECT_GE(ScriptedDevice::done.load(), 10u * IB_POLL_BUDGET_IRQ) << "ksoftirqd may have begun already";
  const ib_poll_counters n = finish(12 * IB_POLL_BUDGET_IRQ);
  EXPECT_EQ(ScriptedDevice::done.load(), 12u * IB_POLL_BUDGET_IRQ);
  EXPECT_EQ(n.at_irq_exit, 10u);
  EXPECT_EQ(n.runs, 13u) << "12 spent budgets, then the one that re-arms";
  EXPECT_EQ(n.budget_spent, 12u);
  EXPECT_EQ(dev.rearms.load(), 1);
}

TEST_F(SoftirqAtIrqExit, AWorkqueueCqIsLeftToItsWorker) {
  cq.poll_ctx = IB_POLL_WORKQUEUE;
  dev.ready = 10;
  workers->hardirq([&] { workers->schedule(&cq); });
  EXPECT_EQ(finish(10).at_irq_exit, 0u);
  EXPECT_EQ(ScriptedDevice::done.load(), 10u) << "its worker polled it";
}

TEST_F(SoftirqAtIrqExit, ACqCancelledWhileRaisedIsNotPolled) {
  cq.poll_ctx = IB_POLL_SOFTIRQ;
  dev.ready = 10;
  workers->hardirq([&] {
    workers->schedule(&cq);
    workers->cancel(&cq);  // as ib_free_cq on another CPU would
  });
  workers->stop();
  EXPECT_EQ(workers->counters().runs, 0u) << "a cancelled CQ is taken off the raised ones";
  EXPECT_EQ(ScriptedDevice::done.load(), 0u);
}

// Where the platform hands softirqs to ksoftirqd, the handler only raises.
TEST_F(ProcessCq, WithoutSoftirqsAtIrqExitKsoftirqdPolls) {
  cq.poll_ctx = IB_POLL_SOFTIRQ;
  dev.ready = 10;
  backends::OsExec exec;
  ib_poll_workers workers(exec);
  workers.hardirq([&] { workers.schedule(&cq); });
  wait_until_polled(dev, 10);
  workers.stop();
  EXPECT_EQ(ScriptedDevice::done.load(), 10u);
  EXPECT_EQ(workers.counters().at_irq_exit, 0u);
  EXPECT_EQ(workers.counters().runs, 1u);
}

}  // namespace
