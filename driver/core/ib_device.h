// ib-core's device and CQ objects, and the driver operations core calls
// (the slice of struct ib_device / ib_device_ops / struct ib_cq the CQ layer uses).
#pragma once

#include <algorithm>
#include <array>
#include <cerrno>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <list>
#include <mutex>
#include <string>

#include "driver/core/ib_qp.h"
#include "driver/core/ib_verbs.h"
#include "driver/core/umem.h"

namespace ibcore {

class ib_device;
class ib_poll_workers;
class ib_pd;

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
  ib_qp* qp = nullptr;  // for the QP events
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

// What ib_register_device caches of the device (ib_query_device's answer, struct
// ib_device_attr): ULPs size against it, uverbs answers QUERY_DEVICE from it.
struct ib_device_attr {
  uint64_t fw_ver = 0;
  uint64_t sys_image_guid = 0;  // as the wire carries it (big-endian)
  uint64_t max_mr_size = 0;
  uint64_t page_size_cap = 0;
  uint32_t vendor_id = 0, vendor_part_id = 0, hw_ver = 0;
  int max_qp = 0, max_qp_wr = 0;
  uint64_t device_cap_flags = 0;
  int max_send_sge = 0, max_recv_sge = 0, max_sge_rd = 0;
  int max_cq = 0, max_cqe = 0;
  int max_mr = 0, max_pd = 0, max_mw = 0, max_ah = 0;
  int max_qp_rd_atom = 0, max_qp_init_rd_atom = 0, max_res_rd_atom = 0;
  int atomic_cap = 0;  // enum ib_atomic_cap
  uint16_t max_pkeys = 0;
  uint8_t local_ca_ack_delay = 0;
  uint32_t max_fast_reg_page_list_len = 0;
};

enum ib_device_cap_flags : uint64_t {
  IB_DEVICE_RC_RNR_NAK_GEN = 1ull << 12,
  IB_DEVICE_MEM_WINDOW = 1ull << 17,
  IB_DEVICE_MEM_MGT_EXTENSIONS = 1ull << 21,
};

enum ib_atomic_cap : int { IB_ATOMIC_NONE = 0, IB_ATOMIC_HCA = 1 };

enum ib_port_state : uint8_t { IB_PORT_DOWN = 1, IB_PORT_ACTIVE = 4 };
enum ib_mtu : uint8_t { IB_MTU_256 = 1, IB_MTU_512, IB_MTU_1024, IB_MTU_2048, IB_MTU_4096 };
enum ib_link_layer : uint8_t { IB_LINK_LAYER_UNSPECIFIED = 0, IB_LINK_LAYER_INFINIBAND, IB_LINK_LAYER_ETHERNET };
enum ib_port_phys_state : uint8_t { IB_PORT_PHYS_STATE_DISABLED = 3, IB_PORT_PHYS_STATE_LINK_UP = 5 };
enum ib_port_capability_mask_bits : uint32_t {
  IB_PORT_CM_SUP = 1u << 16,
  IB_PORT_IP_BASED_GIDS = 1u << 26,
};

// A port as ib_query_port reports it (struct ib_port_attr).
struct ib_port_attr {
  uint32_t port_cap_flags = 0;
  uint32_t max_msg_sz = 0;
  uint32_t gid_tbl_len = 0;
  uint16_t pkey_tbl_len = 0;
  ib_port_state state = IB_PORT_DOWN;
  ib_mtu max_mtu = IB_MTU_256, active_mtu = IB_MTU_256;
  uint8_t active_width = 0, active_speed = 0;
  ib_port_phys_state phys_state = IB_PORT_PHYS_STATE_DISABLED;
  ib_link_layer link_layer = IB_LINK_LAYER_UNSPECIFIED;
};

// A user-space caller's own part of a command (struct ib_udata): the driver's request bytes,
// and where its reply goes, up to outlen bytes. `copy_to_user` is the caller's process's.
struct ib_udata {
  const uint8_t* inbuf = nullptr;
  size_t inlen = 0;
  uint64_t outbuf = 0;  // a user address
  size_t outlen = 0;
  std::function<bool(uint64_t addr, const void* src, size_t len)> copy_to_user;
  ib_user_mm* mm = nullptr;  // the caller's memory, for what it registers
};

// ib_copy_from_udata: at most what the caller sent; the rest of `dst` is left as it was.
inline void ib_copy_from_udata(void* dst, const ib_udata& udata, size_t len) {
  std::memcpy(dst, udata.inbuf, std::min(len, udata.inlen));
}
// ib_copy_to_udata: -EFAULT when the caller's memory does not take it.
inline int ib_copy_to_udata(const ib_udata& udata, const void* src, size_t len) {
  return udata.copy_to_user(udata.outbuf, src, std::min(len, udata.outlen)) ? 0 : -EFAULT;
}

// What a driver keeps per open of its uverbs device (struct ib_ucontext).
struct ib_ucontext {
  virtual ~ib_ucontext() = default;
  ib_device* device = nullptr;
};

// What an mmap of a user context maps (rdma_user_mmap_entry): a range of a BAR's pages.
struct ib_mmap_range {
  unsigned bar = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
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
  virtual int resize_cq(ib_cq*, int /*cqe*/) { return -EOPNOTSUPP; }  // unless offered

  // What user space reaches through uverbs (driver/core/uverbs); -EOPNOTSUPP unless offered.
  // query_device fills what attrs caches; query_port numbers ports from 1.
  virtual int query_device(ib_device_attr* /*attr*/) { return -EOPNOTSUPP; }
  virtual int query_port(uint32_t /*port*/, ib_port_attr* /*attr*/) { return -EOPNOTSUPP; }
  virtual ib_ucontext* alloc_ucontext(ib_udata& /*udata*/, int& err) {
    err = -EOPNOTSUPP;
    return nullptr;
  }
  virtual void dealloc_ucontext(ib_ucontext* /*uctx*/) {}
  // Which device pages an mmap of `length` bytes at `offset` of the context maps.
  virtual int mmap(ib_ucontext* /*uctx*/, uint64_t /*offset*/, uint64_t /*length*/, ib_mmap_range* /*out*/) {
    return -EOPNOTSUPP;
  }
  // A protection domain of a user context, its driver reply in udata.
  virtual ib_pd* alloc_user_pd(ib_ucontext* /*uctx*/, ib_udata& /*udata*/, int& err) {
    err = -EOPNOTSUPP;
    return nullptr;
  }
  virtual int dealloc_user_pd(ib_pd* /*pd*/) { return -EOPNOTSUPP; }
  // A region over user memory (ib_uverbs_reg_mr), `virt` the address its keys name it by.
  virtual ib_mr* reg_user_mr(ib_ucontext* /*uctx*/, ib_pd* /*pd*/, uint64_t /*start*/, uint64_t /*length*/,
                             uint64_t /*virt*/, int /*access*/, ib_udata& /*udata*/, int& err) {
    err = -EOPNOTSUPP;
    return nullptr;
  }
  virtual int dereg_user_mr(ib_mr* /*mr*/) { return -EOPNOTSUPP; }
  // A memory window of `type` (1 or 2) in `pd`, bound later by the application's BIND_MW.
  virtual ib_mw* alloc_user_mw(ib_pd* /*pd*/, uint8_t /*type*/, int& err) {
    err = -EOPNOTSUPP;
    return nullptr;
  }
  virtual int dealloc_user_mw(ib_mw* /*mw*/) { return -EOPNOTSUPP; }
  // A CQ whose ring lives in user memory; destroy_cq ends it.
  virtual ib_cq* create_user_cq(ib_ucontext* /*uctx*/, const ib_cq_init_attr& /*attr*/, ib_udata& /*udata*/,
                                int& err) {
    err = -EOPNOTSUPP;
    return nullptr;
  }
  // A user CQ moved to a ring of `cqe` entries its application registered; cq->cqe says
  // what it holds.
  virtual int resize_user_cq(ib_cq* /*cq*/, int /*cqe*/, ib_udata& /*udata*/) { return -EOPNOTSUPP; }
  // A QP whose queues live in user memory; `attr.cap` comes back as made.
  virtual ib_qp* create_user_qp(ib_ucontext* /*uctx*/, ib_pd* /*pd*/, ib_qp_init_attr& /*attr*/,
                                ib_udata& /*udata*/, int& err) {
    err = -EOPNOTSUPP;
    return nullptr;
  }
  virtual int modify_user_qp(ib_qp* /*qp*/, const ib_qp_attr& /*attr*/, uint32_t /*mask*/) { return -EOPNOTSUPP; }
  virtual int query_user_qp(ib_qp* /*qp*/, ib_qp_attr* /*attr*/, ib_qp_init_attr* /*init*/) {
    return -EOPNOTSUPP;
  }
  virtual int destroy_user_qp(ib_qp* /*qp*/) { return -EOPNOTSUPP; }
  virtual ib_ah* create_user_ah(ib_pd* /*pd*/, const rdma_ah_attr& /*attr*/, ib_udata& /*udata*/, int& err) {
    err = -EOPNOTSUPP;
    return nullptr;
  }
  virtual int destroy_user_ah(ib_ah* /*ah*/) { return -EOPNOTSUPP; }

  ib_device_attr attrs;
  uint64_t node_guid = 0;  // as the wire carries it (big-endian)
  unsigned phys_port_cnt = 1;
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
