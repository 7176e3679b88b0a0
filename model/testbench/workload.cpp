// The workload's program: setup, traffic, teardown. Its parts are in workload/, one file
// per job.
#include "model/testbench/workload.h"

#include <mutex>

#include "model/testbench/host.h"
#include "model/testbench/workload/bookkeeping.h"

namespace irdma_sim::testbench {

Workload::Workload(Host& host, const Scenario& sc, Scoreboard& sb, CompletionLog& log)
    : host_(host), dev_(host.driver()), sc_(sc), sb_(sb), log_(log) {}

Workload::~Workload() = default;

void Workload::run() {
  hal::Exec& exec = dev_.hw().exec;
  completed_ = exec.make_event();
  lock_ = exec.make_lock();
  uint64_t warnings = 0;
  std::string first_warning;
  // ib-core warns from its pool and CQ calls and its poll loop, never under the lock.
  dev_.warnings.sink = [&](const std::string& w) {
    const std::lock_guard<hal::Lock> held(*lock_);
    if (warnings++ == 0) first_warning = w;
  };
  dev_.event_handler = [this](const ibcore::ib_event& ev) { device_fatal(ev); };
  const bool ready = setup();
  const std::lock_guard<hal::Lock> held(*lock_);
  if (ready) traffic();
  teardown();
  if (!counters_.device_fatal)
    for (const auto& [check, why] : lost_with_the_device_)
      sb_.record(check, false, why + ", and the device was never given up");
  if (host_.backdoor()) host_.backdoor()->on_struck_access(nullptr);
  counters_.poisoned_payloads_delivered = sb_.poisoned_payloads_delivered();
  counters_.stale_extended_delivered = sb_.stale_extended_delivered();
  sb_.record("no_driver_warnings", warnings == 0,
             warnings ? std::to_string(warnings) + " warning(s); first: " + first_warning
                      : "ib-core raised no warnings");
  dev_.warnings.sink = nullptr;
  dev_.event_handler = nullptr;
}

}  // namespace irdma_sim::testbench
