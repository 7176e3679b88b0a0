// The control QP and its completion queue (CCQ): how the driver asks the device to create
// and destroy CQs and QPs (spec F; irdma_sc_cqp_* and irdma_sc_ccq_* in Linux).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "driver/hal/platform.h"
#include "driver/irdma/uk.h"

namespace irdma {

struct cqp_completion {
  uint16_t major_err = 0;
  uint16_t minor_err = 0;
  uint32_t op_ret_val = 0;
  // " (major 0x..., minor 0x...)", for an error message.
  std::string describe() const;
};

class irdma_cqp {
 public:
  static constexpr uint32_t kSqSize = 64;          // WQEs; a power of two in 4..2048
  static constexpr uint64_t kTimeoutNs = 5'000'000'000;  // without a completion
  static constexpr uint64_t kPresenceCheckNs = 10'000'000;  // without progress: is the device there?
  static constexpr uint64_t kSpinNs = 1'000'000;     // without progress: spin this long, then
  static constexpr uint64_t kBackoffNs = 20'000;     // look this often

  // `timeout_ns`: how long a command may go without a completion (Linux's
  // CQP_TIMEOUT_THRESHOLD waits of CQP_COMPL_WAIT_TIME_MS: 5 s).
  explicit irdma_cqp(hal::Platform& hw, uint64_t timeout_ns = kTimeoutNs)
      : hw_(hw), timeout_ns_(timeout_ns), lock_(hw.exec.make_lock()) {}
  ~irdma_cqp();
  irdma_cqp(const irdma_cqp&) = delete;
  irdma_cqp& operator=(const irdma_cqp&) = delete;

  // Hands the CQP to the device. Returns 0, -ENOMEM, -ETIMEDOUT, or -EOPNOTSUPP when the
  // device refused it (its CQPERRCODES in `out`).
  int create(irdma_vers hw_rev, cqp_completion* out = nullptr);
  // Creates the CCQ (CQ 0), after which commands complete through it rather than by
  // watching CQPTAIL.
  int create_ccq();
  // Tells the device the CQP is gone, then frees its memory.
  void destroy();

  // Posts one command and waits for its completion: on the CCQ, where callers on several
  // threads share the ring and a full ring backs commands up (each waiter processes the
  // CCQ for all, and holds the lock only while it does); before the CCQ exists, by CQPTAIL
  // passing it (errors in CQPERRCODES), one command at a time. `fill` writes the WQE's qwords 0-2 and
  // 4-7 and returns qword3 without opcode and valid bit. Returns 0, -EIO (the device
  // completed it with an error, see `out`), -ETIMEDOUT, or -ENODEV without a CQP or once
  // the device reads as all ones (gone).
  // A command on the CCQ that times out, or finds the device gone, wedges the CQP for good,
  // as Linux's rf->reset does: on_timeout runs (once, no lock held), later commands never
  // reach the device, and commands waiting give up with -ETIMEDOUT. One that releases an
  // object (a destroy, a dealloc, a flush) succeeds, timed out or refused, as the
  // function's reset releases it; any other fails with -ETIMEDOUT, or -EBUSY once refused.
  // Either returns only once quiesced() was called (or a timeout later): its caller may
  // free memory the command named, which the device may still be writing until then.
  int exec(uint8_t opcode, const std::function<uint64_t(uint64_t* wqe)>& fill,
           cqp_completion* out = nullptr);
  std::function<void()> on_timeout;
  // The device was given up for another reason: the CQP behaves as if a command timed out.
  void give_up();
  // The device masters the bus no more: commands waiting on a wedged CQP, or refused by it,
  // may return.
  void quiesced();

 private:
  bool full() const;
  int64_t post(uint8_t opcode, const std::function<uint64_t(uint64_t* wqe)>& fill);
  int exec_polled(uint8_t opcode, const std::function<uint64_t(uint64_t* wqe)>& fill,
                  cqp_completion* out);
  int wait_for(std::unique_lock<hal::Lock>& guard, const std::function<bool()>& ready);
  // On a wedged CQP: until quiesced(), or timeout_ns_ without it.
  void wait_quiesced(std::unique_lock<hal::Lock>& guard);
  int wait_by_tail(uint32_t old_tail, cqp_completion* out);
  cqp_completion read_errcodes();
  // Consumes every CCQ CQE there is; returns how many.
  int process_ccq();
  void free_memory();

  static bool releases(uint8_t opcode);

  hal::Platform& hw_;
  const uint64_t timeout_ns_;
  // Everything below: the SQ ring, the slots, the CCQ (irdma's cqp->req_lock and the CCQ's
  // lock in one).
  std::unique_ptr<hal::Lock> lock_;
  hal::DmaBuffer sq_, host_ctx_, ccq_ring_, ccq_shadow_;
  irdma_ring sq_ring_;
  uint8_t polarity_ = 0;
  irdma_cq_uk ccq_;
  bool ccq_ready_ = false;
  bool wedged_ = false;
  bool quiesced_ = false;
  struct slot {
    bool pending = false;
    bool done = false;
    cqp_completion result;
  };
  slot slots_[kSqSize];
};

}  // namespace irdma
