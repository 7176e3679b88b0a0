// ib-core's completion processing (spec A.4, H 9-10): budgets, batches, completions with
// and without a consumer, a driver error mid-way; and the poll contexts' budget rule
// (softirq 256, workqueues 65536: a spent budget polls again without re-arming), on
// OS threads against a scripted device.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <deque>
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
    for (int spin = 0; (ScriptedDevice::done < uint64_t(c.ready) || d.rearms == 0) && spin < 5000; spin++)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
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

}  // namespace
