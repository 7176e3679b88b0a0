// The kernel half user space talks to through /dev/infiniband/uverbsN (Linux's ib_uverbs:
// uverbs_main.c and uverbs_cmd.c): one ib_uverbs_file per open of the device, holding its
// user context and the handles of the objects made through it. Commands arrive as the bytes
// of one write(2); replies go to the caller's memory through ib_uverbs_user. It knows
// nothing of where the caller lives (another process, a test): its transport does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "driver/core/ib_device.h"
#include "driver/core/uverbs/ib_user_verbs.h"

namespace ibcore::uverbs {

// A file the caller reads events from: a context's async event file, a completion channel.
// It stays open while the kernel half holds it. Every event starts with the user handle of
// the object it is about (ib_uverbs_comp_event_desc, ib_uverbs_async_event_desc).
class ib_uverbs_event_file {
 public:
  virtual ~ib_uverbs_event_file() = default;
  // Queues an event for the reader; none is ever dropped.
  virtual void queue_event(const void* desc, size_t len) = 0;
  // Takes back the events about `user_handle` the reader has not read (the kernel's
  // release of a destroyed object's events); returns how many.
  virtual uint32_t withdraw_events(uint64_t user_handle) = 0;
};

// The process a command came from.
class ib_uverbs_user {
 public:
  virtual ~ib_uverbs_user() = default;
  // copy_to_user: false when the process's memory does not take it (-EFAULT).
  virtual bool copy_to_user(uint64_t addr, const void* src, size_t len) = 0;
  // A new file in the process (fd_install), whose number is written as a u32 at `fd_addr`
  // after the reply's own bytes; null when the process can take no more files.
  virtual std::shared_ptr<ib_uverbs_event_file> install_event_file(uint64_t fd_addr) = 0;
  // The event file the process holds as `fd` (fdget), or null when that is none this
  // device file installed.
  virtual std::shared_ptr<ib_uverbs_event_file> fget_event_file(int fd) = 0;
  // Its memory, for what commands register.
  virtual ib_user_mm& mm() = 0;
};

class ib_uverbs_file {
 public:
  explicit ib_uverbs_file(ib_device& dev) : dev_(dev) {}
  // The last close (ib_uverbs_close): every object destroyed, newest first, then the context.
  ~ib_uverbs_file();
  ib_uverbs_file(const ib_uverbs_file&) = delete;
  ib_uverbs_file& operator=(const ib_uverbs_file&) = delete;

  // One write(2) of a command: `count` once it is done, else a negative errno (EINVAL for a
  // malformed header or a handle that names nothing of this file's, ENOSPC for buffers
  // shorter than the command's, EOPNOTSUPP for a command this kernel half lacks, EFAULT
  // when the reply cannot be written). Calls on one file come one at a time.
  long write(const void* buf, size_t count, ib_uverbs_user& user);
  // An mmap(2) of the file: which device pages it maps.
  int mmap(uint64_t offset, uint64_t length, ib_mmap_range* out);
  // An event of the device's own (ib_uverbs_event_handler): on the async file, if the
  // context has one, naming the port.
  void device_event(const ib_event& e);

 private:
  // A command's buffers once its header is checked (struct uverbs_attr_bundle): the core
  // request and where the core response goes, and the driver's part as udata.
  struct bundle {
    const uint8_t* core = nullptr;
    size_t core_len = 0;
    uint64_t response = 0;
    size_t out_len = 0;
    ib_udata udata;
    ib_uverbs_user* user = nullptr;
  };
  struct method;
  static const method* find_method(uint32_t command, bool ex);
  // Writes the core response: its first `len` bytes, the rest of the caller's room zeroed.
  static int respond(const bundle& b, const void* resp, size_t len);

  int get_context(bundle& b);
  int query_device(bundle& b);
  int ex_query_device(bundle& b);
  int query_port(bundle& b);
  int alloc_pd(bundle& b);
  int dealloc_pd(bundle& b);
  int create_comp_channel(bundle& b);
  int reg_mr(bundle& b);
  int dereg_mr(bundle& b);
  int alloc_mw(bundle& b);
  int dealloc_mw(bundle& b);
  int create_cq(bundle& b);
  int resize_cq(bundle& b);
  int destroy_cq(bundle& b);
  int create_qp(bundle& b);
  int modify_qp(bundle& b);
  int ex_modify_qp(bundle& b);
  int query_qp(bundle& b);
  int destroy_qp(bundle& b);
  int create_ah(bundle& b);
  int destroy_ah(bundle& b);

  // The handle table (the file's xarray of uobjects): a handle is an index, of one type.
  enum class uobj_type : uint8_t { none, pd, mr, mw, cq, qp, ah };
  struct uobject {
    uobj_type type = uobj_type::none;
    void* object = nullptr;
    uint32_t users = 0;        // objects made on it (a PD's MRs and QPs): it outlives them
    uint64_t user_handle = 0;  // CQ, QP: what its events name it by
    std::shared_ptr<ib_uverbs_event_file> channel;  // CQ: where its completion events go
    uint32_t events_queued = 0;        // CQ: completion events; QP: async events
    uint32_t async_events_queued = 0;  // CQ
    uint32_t pd = 0;  // MR, MW, QP, AH: its PD's handle
  };
  uint32_t alloc_handle(uobj_type type, void* object);
  void* lookup(uobj_type type, uint32_t handle) const;
  // Destroys what a handle holds, as its DESTROY command does; 0 or the driver's error.
  int destroy_uobject(uint32_t handle);
  // Event handlers of the objects (uverbs_cq.cpp, uverbs_qp.cpp).
  void comp_event(uint32_t cq_handle);
  void async_event(uint32_t handle, uint32_t event_type);
  int modify(ib_qp* qp, const ib_uverbs_modify_qp& cmd);

  ib_device& dev_;
  ib_ucontext* ucontext_ = nullptr;
  std::shared_ptr<ib_uverbs_event_file> async_file_;
  // Completion channels made through this file, alive while it is.
  std::vector<std::shared_ptr<ib_uverbs_event_file>> comp_channels_;
  std::vector<uobject> uobjects_;
};

}  // namespace ibcore::uverbs
