// irdma_flush_wq: the delayed flush work as Linux's mod_delayed_work and
// cancel_delayed_work_sync behave, on OS threads.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "driver/backends/os_exec.h"
#include "driver/irdma/flush_wq.h"
#include "driver/irdma/irdma_device.h"

namespace irdma {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

struct FlushWq : ::testing::Test {
  backends::OsExec exec;
  std::atomic<int> runs{0};
  std::atomic<bool> inside{false}, release{true}, again{false};
  steady_clock::time_point last_run;
  irdma_flush_wq wq{exec, [this](irdma_qp*) {
                      inside = true;
                      while (!release) std::this_thread::yield();
                      last_run = steady_clock::now();
                      runs++;
                      inside = false;
                      return again.load();
                    }};
  irdma_qp qp;

  void TearDown() override { wq.stop(); }
  void wait_for_runs(int n) {
    const auto deadline = steady_clock::now() + std::chrono::seconds(5);
    while (runs < n && steady_clock::now() < deadline) std::this_thread::sleep_for(milliseconds(1));
    ASSERT_GE(runs, n);
  }
};

TEST_F(FlushWq, RunsAFlushDelayAfterTheLastSchedule) {
  wq.start();
  const auto first = steady_clock::now();
  wq.schedule(&qp);
  std::this_thread::sleep_for(milliseconds(10));
  const auto second = steady_clock::now();
  wq.schedule(&qp);  // pushes the work back, as mod_delayed_work does
  wait_for_runs(1);
  EXPECT_GE(last_run - second, std::chrono::nanoseconds(IRDMA_FLUSH_DELAY_NS));
  EXPECT_GE(last_run - first, std::chrono::nanoseconds(IRDMA_FLUSH_DELAY_NS) + milliseconds(10));
  std::this_thread::sleep_for(std::chrono::nanoseconds(2 * IRDMA_FLUSH_DELAY_NS));
  EXPECT_EQ(runs, 1) << "two schedules before it ran are one run";
  wq.stop();  // its lock orders the worker's last write before this read
  EXPECT_EQ(qp.flush_due_ns, 0u) << "done: off the queue";
}

TEST_F(FlushWq, WorkThatAsksRunsAgainAndStopsWhenCancelled) {
  again = true;
  wq.start();
  wq.schedule(&qp);
  wait_for_runs(2);
  wq.cancel_sync(&qp);
  const int seen = runs;
  std::this_thread::sleep_for(std::chrono::nanoseconds(2 * IRDMA_FLUSH_DELAY_NS));
  EXPECT_EQ(runs, seen) << "cancelled work never runs again";
}

TEST_F(FlushWq, CancelWaitsForTheRunUnderWay) {
  release = false;
  wq.start();
  wq.schedule(&qp);
  while (!inside) std::this_thread::sleep_for(milliseconds(1));
  std::atomic<bool> cancelled{false};
  std::thread canceller([&] {
    wq.cancel_sync(&qp);
    cancelled = true;
  });
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_FALSE(cancelled) << "the work is still running";
  release = true;
  canceller.join();
  EXPECT_TRUE(cancelled);
  EXPECT_FALSE(inside);
}

TEST_F(FlushWq, WorkScheduledBeforeStartRunsOnceStarted) {
  wq.schedule(&qp);
  std::this_thread::sleep_for(std::chrono::nanoseconds(2 * IRDMA_FLUSH_DELAY_NS));
  EXPECT_EQ(runs, 0) << "no worker yet";
  wq.start();
  wait_for_runs(1);
}

}  // namespace
}  // namespace irdma
