// The scenario's host-side program, run on host CPU 0 against the driver: takes CQs from
// the pool, creates and connects loopback QP pairs, streams SENDs both ways with receives
// replenished as they complete, polls, checks every completion, and tears down.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "driver/backends/device_backdoor.h"
#include "driver/core/ib_device.h"
#include "driver/core/ib_qp.h"
#include "driver/irdma/irdma_device.h"
#include "model/testbench/completion_log.h"
#include "model/testbench/run_progress.h"
#include "model/testbench/scenario.h"
#include "model/testbench/scoreboard.h"
#include "model/testbench/workload/ready_set.h"
#include "model/trace/coverage.h"

namespace irdma_sim::testbench {

class Host;

struct InjectedFault {
  uint32_t qp_num;
  uint64_t request;  // the QP's last request + 1 when a rate drew none
  uint16_t flush_code;
};

struct WorkloadCounters {
  uint64_t sends_posted = 0;
  uint64_t recvs_posted = 0;
  uint64_t completions = 0;
  uint64_t flushed = 0;  // completions the flush path made (vendor_err major 1)
  uint64_t cq_resizes = 0;
  uint64_t cq_errors = 0;         // IB_EVENT_CQ_ERR on the workload's CQs
  uint64_t pairs_torn_down = 0;   // after a CQ error
  uint64_t device_fatal = 0;      // IB_EVENT_DEVICE_FATAL: the driver gave the device up
  uint64_t retired_ring_completions = 0;  // polled from rings a resize retired
  uint64_t corrupt_cqes = 0;  // skipped by the poll path: unknown QP or WQE index
  uint64_t destroyed_qp_cqes = 0;  // dropped by the poll path: their QP was being destroyed
  uint64_t ext_half_waits = 0;  // polls that met a CQE whose extended half had not landed
  uint64_t poisoned_payloads_delivered = 0;  // successful completions whose poisoned data never landed
  uint64_t stale_extended_delivered = 0;  // completions read with a stale extended half (a refused one)
  uint64_t doorbells = 0;
  uint64_t post_errors = 0;
  uint64_t idle_polls = 0;  // times the posting thread had nothing to do and slept
  uint64_t pool_cqs = 0;
  uint64_t cqs_with_completions = 0;  // CQs that delivered at least one
  std::vector<uint64_t> by_status = std::vector<uint64_t>(ibcore::IB_WC_GENERAL_ERR + 1);
  std::vector<std::pair<uint32_t, uint64_t>> by_opcode;  // (opcode, count), first-seen order
  std::vector<InjectedFault> faults;
};

class Workload {
 public:
  Workload(Host& host, const Scenario& sc, Scoreboard& sb, CompletionLog& log);
  ~Workload();

  // The runner's hold on the workload: `stop` is asked between steps and,
  // once it says so, the traffic stops as with traffic.stop_after_ns; `progress` hears how
  // far the traffic has come about twice a second of wall time.
  struct Control {
    std::function<bool()> stop;
    std::function<void(const RunProgress&)> progress;
  };
  void set_control(Control control) { control_ = std::move(control); }

  // The whole program; call on a host thread. Failures land in the scoreboard.
  void run();
  const WorkloadCounters& counters() const { return counters_; }
  // The host side's coverage: completions as the driver delivered them, pool gets.
  const trace::Coverage& coverage() const { return coverage_; }
  // When the traffic began and when the teardown did (wall clock): setup before the one,
  // traffic between them, teardown after the other.
  std::chrono::steady_clock::time_point traffic_started() const { return started_; }
  std::chrono::steady_clock::time_point teardown_started() const { return teardown_started_; }
  // Setup ran into a limit of the configured device or host the scenario could not be
  // checked against beforehand: what, naming the key (empty when none). Not a check
  // failure: the scenario asks for more than the system it configures holds.
  const std::string& limit_error() const { return limit_error_; }
  // What the scenario asked for that this run did not do, though it was no error (a fault
  // whose rate drew no request, a resize that does not apply to pool CQs, a stop the
  // traffic finished before).
  const std::vector<std::string>& warnings() const { return warnings_; }
  // The traffic was cut short by Control::stop, at this time of the host's clock.
  bool interrupted() const { return interrupted_; }
  uint64_t interrupted_at_ps() const { return interrupted_at_ps_; }

 private:
  // The records below, and the parts of the program, each in its file under workload/.
  struct Qp;  // bookkeeping.h
  struct WrCtx;
  struct Incoming;
  // Runs `call` with lock_ let go of; the caller holds it before and after.
  template <typename Call>
  decltype(auto) unlocked(Call&& call);

  // setup.cpp: CQs, QP pairs, memory keys, faults, the first receives.
  bool setup();
  size_t pool_size();  // CQs in the shared pools
  // For a resource error `err` (ENOSPC: `key`'s id space is used up; ENOMEM: host memory)
  // while setup did `what`: notes the limit error and returns true.
  bool out_of(int err, const char* key, uint64_t limit, const std::string& what);
  void inject_faults();
  // The SQ WQE fetches the link's faults refuse, which put their QPs in error with
  // FLUSH_FATAL_ERR, and the payload writes they poison, whose data never lands: reported
  // from the device's thread into struck_, and expected of the scoreboard (expect_struck)
  // before the next completion is checked.
  void listen_for_struck_accesses();
  void expect_struck();
  // memory_keys.cpp
  bool make_keys(Qp& q);
  static void forget_region(Qp& q);
  // posting.cpp: the posting thread's loop, sends and receives.
  void traffic();
  bool finished() const { return unfinished_ == 0; }
  // Keeps `q.done` and unfinished_ up to date after its sends or receives completed.
  void update_finished(Qp& q);
  // The posting thread visits only the QPs something happened to (a completion, a peer's
  // completion, an error, the end of an idle gap), in index order as a scan of all of them
  // would: the cost of an event does not grow with the number of QPs.
  void mark_ready(const Qp& q);
  // The first ready QP at `from` or after, taken off the set (kNoQp: none); QPs whose idle
  // gap is over by now join the set first.
  unsigned next_ready(unsigned from);
  void report_progress();
  uint64_t room(const Qp& q) const;
  bool batch_fits(const Qp& q) const;
  int post_sends(Qp& qp);
  void send_batch(Qp& q);
  void post_failed(const char* verb, int ret);
  int post_recv(Qp& qp);
  void wake_poster(const Qp& q);
  // work_requests.cpp
  void describe(Qp& q, uint64_t seq, TrafficOp op, WrCtx& ctx, ibcore::ib_send_wr& wr,
                ibcore::ib_sge& sge, ExpectedCompletion& done, ExpectedCompletion& msg);
  // completions.cpp: the done callbacks, run by the CQs' poll contexts.
  static void on_send_done(ibcore::ib_cq* cq, ibcore::ib_wc* wc);
  static void on_recv_done(ibcore::ib_cq* cq, ibcore::ib_wc* wc);
  // Counts and logs a completion, its wr_id set from `ctx`; false when its QP's pair was
  // torn down meanwhile and nothing more is to be checked of it.
  // coverage_'s bins for a delivered completion (`success`: as the workload counts it).
  void cover_send(const WrCtx& ctx, const ibcore::ib_wc& wc, bool success);
  void cover_recv(const ibcore::ib_wc& wc);
  void cover_status(const ibcore::ib_wc& wc, bool success);
  bool completed(const WrCtx& ctx, ibcore::ib_wc& wc);
  bool moved_right(const Qp& q, const WrCtx& ctx) const;
  // recovery.cpp: broken connections, CQ errors, resizes, stopping early.
  void cq_error(const ibcore::ib_event& ev);
  void device_fatal(const ibcore::ib_event& ev);
  // A verb that failed, recorded as check `check` failing with `detail` and its errno;
  // unless the device was given up, when a CQP command times out (ETIMEDOUT) and later ones
  // are refused (EBUSY). The driver stops its CQP before it raises IB_EVENT_DEVICE_FATAL,
  // so a verb on another thread may fail that way before the event: judged at the end.
  void verb_failed(const char* check, int ret, const std::string& detail);
  int tear_down_pair(Qp& q);
  int flush_peer(Qp& q);
  int maybe_resize(Qp& q);
  // Every QP to error and destroyed with work in flight; nothing more expected of them.
  void stop_traffic();
  // teardown.cpp: what is left drained, everything destroyed, the final checks.
  void teardown();
  // Adds what the poll path counted on `cq` (CQEs skipped or dropped, retired rings' polls)
  // to counters_: once for each CQ, before it is freed.
  void count_cq_stats(ibcore::ib_cq* cq);
  // Destroys `q`'s QP and frees its buffers (kept when the destroy failed: the device may
  // still use them); false on failure. Called with lock_ held; lets go of it meanwhile.
  bool destroy_qp(Qp& q);

  Host& host_;
  irdma::irdma_device& dev_;
  const Scenario& sc_;
  Scoreboard& sb_;
  CompletionLog& log_;
  // The workload lock, held as a Linux ULP holds a spinlock. The done callbacks and
  // cq_error run on the CQs' poll contexts and the interrupt thread, on OS threads at the
  // same time as the posting thread, and share with it the QPs' records, next_wr_id_,
  // counters_, delivered_on_, the scoreboard, the completion log and run()'s count of
  // ib-core warnings. Each callback holds it for its whole body. The posting thread holds
  // it from the end of setup (which runs before anything can complete, and takes it only
  // to post) to the end of run(), posts included (they do not sleep), and lets go of it,
  // through unlocked(), only to sleep until a completion, to report progress, and around
  // every driver call that may sleep or wait for a poll worker (which may be waiting for
  // this lock): CQ free, resize and pool put, QP flush and destroy, MR and MW release, the
  // teardown's ib_process_cq_direct (it runs the callbacks on the calling thread) and
  // dev.remove(). Not recursive: nothing done under it may call back into the workload.
  std::unique_ptr<hal::Lock> lock_;
  std::vector<std::unique_ptr<Qp>> qps_;
  size_t unfinished_ = 0;     // QPs not done
  ReadySet ready_;            // QP indexes for the posting thread to visit
  static constexpr unsigned kNoQp = ReadySet::kNone;
  // Idle gaps after bursts: (end in ns, QP index), earliest first; an entry is stale when
  // the QP's idle_until_ns has moved on.
  std::priority_queue<std::pair<uint64_t, unsigned>, std::vector<std::pair<uint64_t, unsigned>>, std::greater<>> idle_;
  std::vector<ibcore::ib_cq*> cqs_;  // distinct pool CQs, in the order they were got
  uint64_t next_wr_id_ = 1;
  std::vector<ibcore::ib_send_wr> wr_scratch_;  // one batch being posted
  std::vector<ibcore::ib_sge> sge_scratch_;
  std::unique_ptr<hal::Event> completed_;  // signalled by every completion
  bool stopped_early_ = false;             // the traffic was stopped with work in flight
  std::string limit_error_;
  std::vector<std::string> warnings_;
  // Verbs that failed as on a device given up before IB_EVENT_DEVICE_FATAL came: (check,
  // detail), failed at the end of the run if it never came.
  std::vector<std::pair<const char*, std::string>> lost_with_the_device_;
  bool interrupted_ = false;               // by Control::stop
  uint64_t interrupted_at_ps_ = 0;
  Control control_;
  std::chrono::steady_clock::time_point started_, last_progress_, teardown_started_;
  WorkloadCounters counters_;
  trace::Coverage coverage_;
  std::vector<bool> delivered_on_;  // by CQ number
  // Never held across a wait: the device's thread takes it while host threads may hold lock_.
  std::mutex struck_lock_;
  std::vector<backends::DeviceBackdoor::StruckAccess> struck_;
};

}  // namespace irdma_sim::testbench
