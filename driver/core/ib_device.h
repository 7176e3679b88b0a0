// ib-core's device and CQ objects, and the driver operations core calls
// (the slice of struct ib_device / ib_device_ops / struct ib_cq the CQ layer uses).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <string>

#include "driver/core/ib_verbs.h"

namespace ibcore {

class ib_device;
class ib_poll_workers;

struct ib_cq_init_attr {
  unsigned cqe = 0;
  unsigned comp_vector = 0;
  uint32_t flags = 0;
};

// An asynchronous event (struct ib_event), as far as CQs and the device are concerned.
enum ib_event_type : int {
  IB_EVENT_CQ_ERR = 0,
  IB_EVENT_QP_FATAL = 1,
  IB_EVENT_QP_REQ_ERR = 2,
  IB_EVENT_QP_ACCESS_ERR = 3,
  IB_EVENT_DEVICE_FATAL = 8,  // the device is lost: every QP's work flushes
};

struct ib_cq;
struct ib_event {
  ib_device* device = nullptr;
  ib_cq* cq = nullptr;
  ib_event_type event = IB_EVENT_CQ_ERR;
};

struct ib_cq {
  virtual ~ib_cq() = default;

  ib_device* device = nullptr;
  std::function<void(ib_cq*)> comp_handler;
  std::function<void(const ib_event&)> event_handler;
  void* cq_context = nullptr;
  int cqe = 0;                 // capacity as the driver reports it
  unsigned cqe_used = 0;       // pool accounting (under the device's cq_pools_lock)
  std::atomic<unsigned> usecnt{0};  // QPs using this CQ
  ib_poll_context poll_ctx = IB_POLL_DIRECT;
  std::array<ib_wc, IB_POLL_BATCH> wc{};
  unsigned comp_vector = 0;
  bool shared = false;
  bool poll_scheduled = false;  // queued on its poll context's worker
  bool poll_running = false;    // being polled by it
  bool poll_disabled = false;   // cancelled: never scheduled again
};

struct ib_device_attr {
  int max_cqe = 0;
};

// How ib_cq_pool_get picks among fitting CQs.
enum class cq_pool_policy {
  // As documented: the least-used CQ that fits and matches the vector (-1: of any vector).
  least_used,
  // As drivers/infiniband/core/cq.c does it: first fit in list order, newest batch first,
  // round-robin vector for a negative hint.
  kernel_first_fit,
};

// Warnings core raises where the kernel would WARN_ON_ONCE; collected, never fatal.
struct ib_warning_log {
  std::function<void(const std::string&)> sink;
  void warn(const std::string& what) const {
    if (sink) sink(what);
  }
};

class ib_device {
 public:
  virtual ~ib_device() = default;

  // Driver operations (ib_device_ops). create_cq returns the driver's CQ object, which
  // core owns until destroy_cq; on failure it returns nullptr and sets `err`.
  virtual ib_cq* create_cq(const ib_cq_init_attr& attr, int& err) = 0;
  virtual int destroy_cq(ib_cq* cq) = 0;
  virtual int poll_cq(ib_cq* cq, int num_entries, ib_wc* wc) = 0;
  virtual int req_notify_cq(ib_cq* cq, unsigned flags) = 0;
  virtual int resize_cq(ib_cq*, int /*cqe*/) { return -95; }  // -EOPNOTSUPP unless offered

  ib_device_attr attrs;
  unsigned num_comp_vectors = 1;
  unsigned num_online_cpus = 1;

  cq_pool_policy pool_policy = cq_pool_policy::least_used;
  // The pools, their CQs' cqe_used and default_comp_vector. Never held across a CQ's
  // creation or anything else that waits, so it needs no SystemC-aware lock: SystemC
  // threads interleave only where they wait.
  std::mutex cq_pools_lock;
  // The shared CQ pools, one list per pool poll context, newest growth batch first.
  std::array<std::list<ib_cq*>, IB_POLL_LAST_POOL_TYPE + 1> cq_pools;
  // The kernel keeps this counter static in ib_cq_pool_get; per device keeps runs reproducible.
  int default_comp_vector = 0;
  ib_warning_log warnings;
  // Device events (ib_register_event_handler's, one client): IB_EVENT_DEVICE_FATAL. Set
  // before the device is used; called on the thread that found the fault, no lock held.
  std::function<void(const ib_event&)> event_handler;
  // Where SOFTIRQ and WORKQUEUE CQs are polled once their completion event fires; set by
  // the provider when it can take interrupts.
  ib_poll_workers* poll_workers = nullptr;
};

inline int ib_poll_cq(ib_cq* cq, int num_entries, ib_wc* wc) {
  return cq->device->poll_cq(cq, num_entries, wc);
}

inline int ib_req_notify_cq(ib_cq* cq, unsigned flags) {
  return cq->device->req_notify_cq(cq, flags);
}

}  // namespace ibcore
