// The shared-code layer of Linux's ctrl.c: the control QP and its CCQ, which post CQP
// commands and reap their completions (irdma_sc_cqp_*, irdma_sc_ccq_*), and the device's
// own bring-up steps that need no HMC (irdma_wait_pe_ready, irdma_get_rdma_features).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "driver/irdma/type.h"

namespace irdma {
namespace {

constexpr uint32_t kCcqSize = irdma_cqp::kSqSize + 1;
constexpr uint32_t kCcqShadowReadThreshold = 16;
constexpr uint64_t kStatusPollNs = 1'000;
constexpr uint64_t kPeReadyPollNs = 1'000'000'000;
// Contexts the device echoes: opaque cookies rather than Linux's pointers (see uk.h).
constexpr uint64_t kCqpContext = 0x4350'0000'0000'0000ull;  // "CP"
constexpr uint64_t kCcqContext = 0x4343'0000'0000'0000ull;  // "CC", even

uint32_t log2u(uint32_t v) {
  uint32_t l = 0;
  while (v >>= 1) l++;
  return l;
}

}  // namespace

std::string cqp_completion::describe() const {
  char s[40];
  std::snprintf(s, sizeof s, " (major 0x%04x, minor 0x%04x)", major_err, minor_err);
  return s;
}

// Teardown without a device to talk to (it may be gone): only the memory is released.
irdma_cqp::~irdma_cqp() { free_memory(); }

int irdma_cqp::create(irdma_vers hw_rev, cqp_completion* out) {
  sq_ = hw_.dma.alloc_coherent(kSqSize * IRDMA_CQP_WQE_SIZE_BYTES, 0x200);
  host_ctx_ = hw_.dma.alloc_coherent(64, 64);
  ccq_ring_ = hw_.dma.alloc_coherent(kCcqSize * IRDMA_CQE_SIZE_BYTES, 256);
  ccq_shadow_ = hw_.dma.alloc_coherent(IRDMA_SHADOW_AREA_SIZE_BYTES, 64);
  if (!sq_ || !host_ctx_ || !ccq_ring_ || !ccq_shadow_) {
    free_memory();
    return -ENOMEM;
  }
  sq_ring_ = {0, 0, kSqSize};
  polarity_ = 0;

  auto* ctx = static_cast<uint64_t*>(host_ctx_.cpu);
  // SQ size is encoded as log2(size) - 1 for the CQP.
  ctx[0] = FIELD_PREP(IRDMA_CQPHC_SQSIZE, log2u(kSqSize) - 1);
  ctx[1] = sq_.iova;
  ctx[3] = kCqpContext;  // echoed in every CCQ CQE
  ctx[4] = FIELD_PREP(IRDMA_CQPHC_HW_MAJVER, hw_rev == IRDMA_GEN_1 ? 0 : hw_rev - 1);
  hal::dma_wmb();
  hw_.bar0.write32(IRDMA_CCQPHIGH, uint32_t(host_ctx_.iova >> 32));
  hw_.bar0.write32(IRDMA_CCQPLOW, uint32_t(host_ctx_.iova));

  const uint64_t start = hw_.exec.now_ns();
  uint32_t status = 0;
  while ((status = hw_.bar0.read32(IRDMA_CCQPSTATUS)) == 0) {
    if (hw_.exec.now_ns() - start > timeout_ns_) return -ETIMEDOUT;
    hw_.exec.delay_ns(kStatusPollNs);
  }
  if (status & IRDMA_CCQPSTATUS_CCQP_ERR) {
    if (out) *out = read_errcodes();
    return -EOPNOTSUPP;
  }
  return 0;
}

cqp_completion irdma_cqp::read_errcodes() {
  const uint32_t codes = hw_.bar0.read32(IRDMA_CQPERRCODES);
  return {uint16_t(codes >> 16), uint16_t(codes), 0};
}

int irdma_cqp::exec_polled(uint8_t opcode, const std::function<uint64_t(uint64_t* wqe)>& fill,
                           cqp_completion* out) {
  const uint32_t old_tail = hw_.bar0.read32(IRDMA_CQPTAIL) & IRDMA_CQPTAIL_WQTAIL;
  const int64_t idx = post(opcode, fill);
  slots_[idx].pending = false;  // completed by CQPTAIL, not by a CCQ CQE
  return wait_by_tail(old_tail, out);
}

int irdma_cqp::create_ccq() {
  irdma_uk_cq_init(&ccq_, static_cast<uint64_t*>(ccq_ring_.cpu),
                   static_cast<uint64_t*>(ccq_shadow_.cpu), 0, kCcqSize, false);
  const int ret = exec(IRDMA_CQP_OP_CREATE_CQ, [this](uint64_t* wqe) {
    wqe[0] = kCcqSize;
    wqe[1] = FIELD_PREP(IRDMA_CQPSQ_CQ_CQCTX, kCcqContext >> 1);
    wqe[2] = FIELD_PREP(IRDMA_CQPSQ_CQ_SHADOW_READ_THRESHOLD, kCcqShadowReadThreshold);
    wqe[4] = ccq_ring_.iova;
    wqe[5] = ccq_shadow_.iova;
    return FIELD_PREP(IRDMA_CQPSQ_CQ_CQID, 0) | IRDMA_CQPSQ_CQ_CHKOVERFLOW |
           IRDMA_CQPSQ_CQ_CEQIDVALID;
  });
  if (ret) return ret;
  std::lock_guard<hal::Lock> guard(*lock_);
  ccq_ready_ = true;
  return 0;
}

int irdma_cqp::wait_by_tail(uint32_t old_tail, cqp_completion* out) {
  const uint64_t start = hw_.exec.now_ns();
  for (;;) {
    const uint32_t reg = hw_.bar0.read32(IRDMA_CQPTAIL);
    if (reg == ~0u) return -ENODEV;  // the device is gone
    if (reg & IRDMA_CQPTAIL_CQP_OP_ERR) {
      if (out) *out = read_errcodes();
      return -EIO;
    }
    if ((reg & IRDMA_CQPTAIL_WQTAIL) != old_tail) break;
    if (hw_.exec.now_ns() - start > timeout_ns_) return -ETIMEDOUT;
    hw_.exec.delay_ns(kStatusPollNs);
  }
  sq_ring_.tail = ring_next(sq_ring_.tail, sq_ring_.size);
  return 0;
}

void irdma_cqp::destroy() {
  std::lock_guard<hal::Lock> guard(*lock_);
  if (host_ctx_) {
    hw_.bar0.write32(IRDMA_CCQPHIGH, 0);
    hw_.bar0.write32(IRDMA_CCQPLOW, 0);
  }
  free_memory();
}

void irdma_cqp::free_memory() {
  for (hal::DmaBuffer* b : {&sq_, &host_ctx_, &ccq_ring_, &ccq_shadow_}) {
    if (*b) hw_.dma.free_coherent(*b);
    *b = {};
  }
  ccq_ready_ = false;
}

bool irdma_cqp::full() const {
  // A slot whose result its caller has not collected yet is not free either.
  return ring_used(sq_ring_) + 1 >= sq_ring_.size || slots_[sq_ring_.head].done;
}

int64_t irdma_cqp::post(uint8_t opcode, const std::function<uint64_t(uint64_t* wqe)>& fill) {
  const uint32_t idx = sq_ring_.head;
  if (idx == 0) polarity_ ^= 1;
  sq_ring_.head = ring_next(idx, sq_ring_.size);

  uint64_t* wqe = static_cast<uint64_t*>(sq_.cpu) + idx * (IRDMA_CQP_WQE_SIZE_BYTES / 8);
  std::memset(wqe, 0, IRDMA_CQP_WQE_SIZE_BYTES);
  const uint64_t hdr = fill(wqe) | FIELD_PREP(IRDMA_CQPSQ_OPCODE, opcode) |
                       FIELD_PREP(IRDMA_CQPSQ_WQEVALID, polarity_);
  hal::dma_wmb();
  WRITE_ONCE(wqe[3], hdr);
  slots_[idx] = slot{true, false, {}};
  hw_.bar0.write32(IRDMA_CQPDB, sq_ring_.head);
  return idx;
}

int irdma_cqp::process_ccq() {
  int consumed = 0;
  for (;;) {
    uint64_t* cqe = ccq_.cqe_at(ccq_.cq_ring.head);
    const uint64_t qword3 = READ_ONCE(cqe[3]);
    if (FIELD_GET(IRDMA_CQ_VALID, qword3) != ccq_.polarity) break;
    hal::dma_rmb();
    const uint32_t idx = uint32_t(FIELD_GET(IRDMA_CQ_WQEIDX, qword3));
    if (READ_ONCE(cqe[1]) == kCqpContext && idx < kSqSize &&
        slots_[idx].pending) {
      slot& s = slots_[idx];
      s.pending = false;
      s.done = true;
      if (qword3 & IRDMA_CQ_ERROR) {
        s.result.major_err = uint16_t(FIELD_GET(IRDMA_CQ_MAJERR, qword3));
        s.result.minor_err = uint16_t(FIELD_GET(IRDMA_CQ_MINERR, qword3));
      }
      s.result.op_ret_val = uint32_t(FIELD_GET(IRDMA_CCQ_OPRETVAL, READ_ONCE(cqe[2])));
    } else {
      ccq_.corrupt_cqes++;
    }
    if (++ccq_.cq_ring.head == ccq_.cq_ring.size) {
      ccq_.cq_ring.head = 0;
      ccq_.polarity ^= 1;
    }
    WRITE_ONCE(ccq_.shadow_area[0], uint64_t(ccq_.cq_ring.head));
    hal::dma_wmb();
    sq_ring_.tail = ring_next(sq_ring_.tail, sq_ring_.size);
    consumed++;
  }
  return consumed;
}

bool irdma_cqp::releases(uint8_t opcode) {
  switch (opcode) {
    case IRDMA_CQP_OP_DESTROY_QP:
    case IRDMA_CQP_OP_DESTROY_CQ:
    case IRDMA_CQP_OP_DESTROY_CEQ:
    case IRDMA_CQP_OP_DESTROY_AEQ:
    case IRDMA_CQP_OP_DEALLOC_STAG:
    case IRDMA_CQP_OP_FLUSH_WQES: return true;
    default: return false;
  }
}

void irdma_cqp::give_up() {
  std::lock_guard<hal::Lock> guard(*lock_);
  wedged_ = true;
}

void irdma_cqp::quiesced() {
  std::lock_guard<hal::Lock> guard(*lock_);
  quiesced_ = true;
}

void irdma_cqp::wait_quiesced(std::unique_lock<hal::Lock>& guard) {
  const uint64_t start = hw_.exec.now_ns();
  while (!quiesced_ && hw_.exec.now_ns() - start <= timeout_ns_) {
    guard.unlock();
    hw_.exec.delay_ns(kBackoffNs);
    guard.lock();
  }
}

int irdma_cqp::exec(uint8_t opcode, const std::function<uint64_t(uint64_t* wqe)>& fill,
                    cqp_completion* out) {
  std::unique_lock<hal::Lock> guard(*lock_);
  if (wedged_) {
    wait_quiesced(guard);
    return releases(opcode) ? 0 : -EBUSY;
  }
  // Before the CCQ only probe posts: the whole command under the lock.
  if (!ccq_ready_) return host_ctx_ ? exec_polled(opcode, fill, out) : -ENODEV;
  // A full ring backs the command up until completions free a slot (irdma's backlog): a
  // wait that gives up there is the device's as much as one for the command's completion.
  int64_t idx = -1;
  int ret = wait_for(guard, [&] { return !full(); });
  if (!ret) {
    idx = post(opcode, fill);
    ret = wait_for(guard, [&] { return slots_[idx].done; });
  }
  if (ret) {
    if (idx >= 0) slots_[idx].pending = false;
    if (ret != -ETIMEDOUT && ret != -ENODEV) return ret;
    const bool first = !wedged_;  // else the device was given up meanwhile
    wedged_ = true;
    guard.unlock();
    if (first && on_timeout) on_timeout();
    // The device may have been given up on another thread first, its reset still under way.
    guard.lock();
    wait_quiesced(guard);
    return releases(opcode) ? 0 : ret;
  }
  const cqp_completion result = slots_[idx].result;
  slots_[idx].done = false;  // collected: the slot may be reused
  if (out) *out = result;
  return result.major_err || result.minor_err ? -EIO : 0;
}

// Runs the CCQ until `ready()`, or -ETIMEDOUT after timeout_ns_ without a completion. The
// lock is dropped between looks, so other callers post and collect meanwhile.
int irdma_cqp::wait_for(std::unique_lock<hal::Lock>& guard, const std::function<bool()>& ready) {
  uint64_t last_progress = hw_.exec.now_ns();
  uint64_t last_presence_check = last_progress;
  while (!ready()) {
    if (wedged_) {  // another command's wait gave up on the device
      wait_quiesced(guard);
      return -ETIMEDOUT;
    }
    if (process_ccq() > 0) {
      last_progress = last_presence_check = hw_.exec.now_ns();
      continue;
    }
    const uint64_t now = hw_.exec.now_ns();
    if (now - last_progress > timeout_ns_) return -ETIMEDOUT;
    // A device that answers reads with all ones is gone (surprise removal, a dead link or
    // server): no completion will come, so waiting out the timeout helps no one.
    if (now - last_presence_check > kPresenceCheckNs) {
      if (hw_.bar0.read32(IRDMA_CQPTAIL) == ~0u) return -ENODEV;
      last_presence_check = now;
    }
    // Spin while a completion is due any moment; past that, give the CPU up between looks
    // (on OS threads the device may need this very core).
    guard.unlock();
    if (now - last_progress < kSpinNs)
      hw_.exec.cpu_relax();
    else
      hw_.exec.delay_ns(kBackoffNs);
    guard.lock();
  }
  return 0;
}

int irdma_sc_dev::fail(int err, const std::string& what) {
  if (init_error.empty()) init_error = what;
  return err;
}

// irdma_wait_pe_ready, then the doorbell BAR check of irdma_sc_dev_init.
int irdma_sc_dev::wait_pe_ready() {
  for (uint32_t polls = 1;; polls++) {
    if (hw.bar0.read32(IRDMA_GLPE_CPUSTATUS0) == IRDMA_CPU_READY &&
        hw.bar0.read32(IRDMA_GLPE_CPUSTATUS1) == IRDMA_CPU_READY &&
        hw.bar0.read32(IRDMA_GLPE_CPUSTATUS2) == IRDMA_CPU_READY)
      break;
    if (polls == IRDMA_MAX_PE_READY_POLLS)
      return fail(-ETIMEDOUT, "the protocol engine's CPUs did not report ready (GLPE_CPUSTATUS0-2) in " +
                                  std::to_string(polls) + " polls a second apart");
    hw.exec.delay_ns(kPeReadyPollNs);
  }
  const uint64_t db_size = FIELD_GET(IRDMA_GLPCI_LBARCTRL_PE_DB_SIZE, hw.bar0.read32(IRDMA_GLPCI_LBARCTRL));
  if (db_size != IRDMA_PE_DB_SIZE_4M && db_size != IRDMA_PE_DB_SIZE_8M)
    return fail(-ENODEV, "GLPCI_LBARCTRL reports PE doorbell size " + std::to_string(db_size) +
                             ": neither 4 MiB (1) nor 8 MiB (2)");
  caps.db_addr_offset = db_size == IRDMA_PE_DB_SIZE_4M ? IRDMA_DB_ADDR_OFFSET_4M : IRDMA_DB_ADDR_OFFSET_8M;
  return 0;
}

// QUERY_RDMA_FEATURES (irdma_get_rdma_features): asked again with room for all of them
// when the first answer counts more than fit.
int irdma_sc_dev::query_features() {
  uint32_t room = IRDMA_MAX_FEATURES;
  for (int attempt = 0; attempt < 2; attempt++) {
    hal::DmaBuffer buf = hw.dma.alloc_coherent(room * 8, 64);
    if (!buf) return fail(-ENOMEM, "allocating the feature buffer");
    cqp_completion err;
    const int ret = cqp.exec(IRDMA_CQP_OP_QUERY_RDMA_FEATURES, [&](uint64_t* wqe) {
      wqe[4] = buf.iova;
      return uint64_t(room * 8);
    }, &err);
    hal::dma_rmb();
    const auto* f = static_cast<const uint64_t*>(buf.cpu);
    const uint32_t count = ret ? 0 : uint32_t(FIELD_GET(IRDMA_FEATURE_CNT, f[0]));
    if (!ret && count <= room) {
      for (uint32_t i = 0; i < count; i++) {
        const uint64_t value = FIELD_GET(IRDMA_FEATURE_INFO, f[i]);
        switch (FIELD_GET(IRDMA_FEATURE_TYPE, f[i])) {
          case IRDMA_FEATURE_FW_INFO: caps.fw_version = uint32_t(value); break;
          case IRDMA_FTN_FLAGS:
            caps.atomics = value & IRDMA_ATOMICS_ALLOWED_BIT;
            caps.cq_resize = value & IRDMA_SIM_FTN_CQ_RESIZE;
            caps.cqe_64byte = value & IRDMA_SIM_FTN_64BYTE_CQE;
            break;
          case IRDMA_SIM_FEATURE_MAX_CQE: caps.max_cqe = int(std::min<uint64_t>(value, IRDMA_MAX_CQ_SIZE - 1)); break;
          default: break;  // a feature this driver does not use
        }
      }
    }
    hw.dma.free_coherent(buf);
    if (ret) return fail(ret, "QUERY_RDMA_FEATURES" + err.describe());
    if (count < 2) return fail(-EINVAL, "QUERY_RDMA_FEATURES reported " + std::to_string(count) + " features");
    if (count <= room) return caps.max_cqe > 0 ? 0 : fail(-EINVAL, "QUERY_RDMA_FEATURES reported no CQ size");
    room = count;
  }
  return fail(-EINVAL, "QUERY_RDMA_FEATURES counted more features on the second query");
}

}  // namespace irdma
