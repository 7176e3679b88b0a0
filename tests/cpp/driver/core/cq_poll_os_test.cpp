// ib-core's poll contexts on OS threads (backends::OsExec): completion events raised from many
// threads at once for many CQs; every completion is processed exactly once, a CQ is never
// polled by two workers at a time, and the workers stop and join. And OsExec's lock: it
// excludes, and hands itself to its sleepers in turn.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "driver/backends/os_exec.h"
#include "driver/core/cq_poll.h"

namespace {

using namespace ibcore;

// CQs whose completions are counters: a producer adds some, polling hands them out.
struct CountingCq : ib_cq {
  std::atomic<int> ready{0};
  std::atomic<int> pollers{0};  // workers inside poll_cq at once
  std::atomic<int> overlap{0};
};

struct CountingDevice final : ib_device {
  ib_cqe done{&on_done};
  static std::atomic<uint64_t> processed;
  static void on_done(ib_cq*, ib_wc*) { processed++; }

  ib_cq* create_cq(const ib_cq_init_attr&, int& err) override {
    err = -1;
    return nullptr;
  }
  int destroy_cq(ib_cq*) override { return 0; }
  int poll_cq(ib_cq* ibcq, int n, ib_wc* wc) override {
    auto* cq = static_cast<CountingCq*>(ibcq);
    if (cq->pollers++ != 0) cq->overlap++;
    int got = 0;
    for (; got < n; got++) {
      int r = cq->ready.load();
      while (r > 0 && !cq->ready.compare_exchange_weak(r, r - 1)) {
      }
      if (r <= 0) break;
      wc[got] = ib_wc{};
      wc[got].wr_cqe = &done;
    }
    cq->pollers--;
    return got;
  }
  // A completion that came in meanwhile is a missed event: poll again.
  int req_notify_cq(ib_cq* ibcq, unsigned flags) override {
    return (flags & IB_CQ_REPORT_MISSED_EVENTS) && static_cast<CountingCq*>(ibcq)->ready > 0;
  }
};
std::atomic<uint64_t> CountingDevice::processed{0};

// hal::Lock on OS threads: mutual exclusion under contention (the futex path), and a lock
// whose holder sleeps makes the next taker wait for it.
TEST(OsExecLock, ExcludesUnderContention) {
  backends::OsExec exec;
  auto lock = exec.make_lock();
  uint64_t counter = 0;  // plain: only the lock keeps the increments whole
  std::atomic<int> inside{0}, overlap{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50000; i++) {
        std::lock_guard<hal::Lock> guard(*lock);
        if (inside++) overlap++;
        counter++;
        if (t == 0 && i % 10000 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
        inside--;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(counter, 200000u);
  EXPECT_EQ(overlap.load(), 0);
}

TEST(PollContextsOnOsThreads, EveryCompletionOnceNoCqPolledTwiceAtOnce) {
  CountingDevice dev;
  std::vector<std::unique_ptr<CountingCq>> cqs;
  const ib_poll_context kinds[] = {IB_POLL_SOFTIRQ, IB_POLL_WORKQUEUE, IB_POLL_UNBOUND_WORKQUEUE};
  for (unsigned i = 0; i < 12; i++) {
    auto cq = std::make_unique<CountingCq>();
    cq->device = &dev;
    cq->poll_ctx = kinds[i % 3];
    cq->comp_vector = i;
    cqs.push_back(std::move(cq));
  }
  constexpr int kPerThread = 20000;
  {
    auto exec = std::make_unique<backends::OsExec>();
    auto workers = std::make_unique<ib_poll_workers>(*exec);
    dev.poll_workers = workers.get();
    // Four "interrupt" threads: each makes completions ready, then raises the CQ's event.
    std::vector<std::thread> irqs;
    for (int t = 0; t < 4; t++) {
      irqs.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; i++) {
          CountingCq& cq = *cqs[(t * 7 + i) % cqs.size()];
          cq.ready++;
          workers->schedule(&cq);
        }
      });
    }
    for (std::thread& t : irqs) t.join();
    for (int spin = 0; CountingDevice::processed < 4u * kPerThread && spin < 10000; spin++)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    workers->stop();  // returns once every worker has
    EXPECT_GT(workers->counters().runs, 0u);
    exec.reset();  // joins the threads
  }
  EXPECT_EQ(CountingDevice::processed.load(), 4u * kPerThread);
  for (const auto& cq : cqs) {
    EXPECT_EQ(cq->ready.load(), 0);
    EXPECT_EQ(cq->overlap.load(), 0);
  }
}

// The state (R, S, ...) the kernel shows for a thread of this process.
char thread_state(pid_t tid) {
  std::ifstream stat("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const size_t after_name = line.rfind(')');
  return after_name == std::string::npos || after_name + 2 >= line.size() ? '?' : line[after_name + 2];
}

// A woken thread that is not running yet: a signal handler holds it until released.
std::atomic<bool> held_in_handler{false}, hold_in_handler{false};
void hold_until_released(int) {
  held_in_handler = true;
  while (hold_in_handler) {
  }
  held_in_handler = false;
}

// Holds thread `tid`, asleep, in the handler above.
void hold_sleeping(pid_t tid) {
  hold_in_handler = true;
  syscall(SYS_tgkill, getpid(), tid, SIGUSR1);
  while (!held_in_handler) std::this_thread::yield();
}

// A waiter that was woken and beaten to the lock is handed it at the holder's next unlock,
// even while it cannot run yet, and a holder that locks again at once queues behind it. A
// plain futex mutex let such a thread (the workload's posting loop) take the lock back
// every time while the woken waiter (a poll context on a loaded CPU) waited for a CPU:
// poll contexts starved for seconds on a served device.
TEST(OsExecLock, AWaiterBeatenOnceIsHandedTheLockNext) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer delivers a signal only once its thread leaves the blocking call, so the "
                  "handler cannot hold a sleeping waiter";
#endif
  struct sigaction act {};
  act.sa_handler = hold_until_released;  // no SA_RESTART: the futex wait returns early
  struct sigaction before {};
  ASSERT_EQ(sigaction(SIGUSR1, &act, &before), 0);
  backends::OsExec exec;
  auto lock = exec.make_lock();
  lock->lock();
  std::atomic<int> holder_rounds{0};
  std::atomic<pid_t> waiter_tid{0};
  int rounds_seen = -1;
  std::thread waiter([&] {
    waiter_tid = pid_t(syscall(SYS_gettid));
    lock->lock();
    rounds_seen = holder_rounds.load();
    lock->unlock();
  });
  const auto asleep = [&] { return waiter_tid && lock->is_contended() && thread_state(waiter_tid) == 'S'; };
  while (!asleep()) std::this_thread::yield();
  // Woken while it cannot run, it finds the lock taken again.
  hold_sleeping(waiter_tid);
  holder_rounds = 1;
  lock->unlock();
  lock->lock();
  hold_in_handler = false;
  while (held_in_handler || !asleep()) std::this_thread::yield();
  // Now it is handed the lock at the next unlock, though it cannot run for a while.
  hold_sleeping(waiter_tid);
  std::thread releaser([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    hold_in_handler = false;
  });
  for (int round = 2; round <= 1000; round++) {
    holder_rounds = round;
    lock->unlock();
    lock->lock();
  }
  lock->unlock();
  waiter.join();
  releaser.join();
  sigaction(SIGUSR1, &before, nullptr);
  EXPECT_EQ(rounds_seen, 2) << "the holder took the lock back " << rounds_seen - 2 << " more time(s) from its waiter";
}

// cancel() (ib_free_cq's) waits for a poll under way, and nothing schedules the CQ after.
TEST(PollContextsOnOsThreads, CancelWaitsForARunningPollAndDisablesTheCq) {
  struct SlowDevice final : ib_device {
    std::atomic<bool> inside{false}, release{false};
    ib_cq* create_cq(const ib_cq_init_attr&, int& err) override {
      err = -1;
      return nullptr;
    }
    int destroy_cq(ib_cq*) override { return 0; }
    int poll_cq(ib_cq*, int, ib_wc*) override {
      inside = true;
      while (!release) std::this_thread::yield();
      return 0;
    }
    int req_notify_cq(ib_cq*, unsigned) override { return 0; }
  } dev;
  ib_cq cq;
  cq.device = &dev;
  cq.poll_ctx = IB_POLL_SOFTIRQ;
  auto exec = std::make_unique<backends::OsExec>();
  auto workers = std::make_unique<ib_poll_workers>(*exec);
  workers->schedule(&cq);
  while (!dev.inside) std::this_thread::yield();
  std::atomic<bool> cancelled{false};
  std::thread canceller([&] {
    workers->cancel(&cq);
    cancelled = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(cancelled) << "the poll is still running";
  dev.release = true;
  canceller.join();
  EXPECT_TRUE(cancelled);
  EXPECT_FALSE(cq.poll_running);
  EXPECT_EQ(workers->counters().cancels_waited, 1u);
  workers->schedule(&cq);
  EXPECT_FALSE(cq.poll_scheduled) << "a cancelled CQ is not scheduled again";
  workers->cancel(&cq);
  EXPECT_EQ(workers->counters().cancels_waited, 1u) << "no poll was under way";
  workers->stop();
  exec.reset();
}

}  // namespace
