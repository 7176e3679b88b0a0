#include "model/device/irdma_device.h"

#include <algorithm>
#include <cstring>

#include "model/device/regs.h"

namespace irdma_sim::device {

using namespace regs;
using sc_core::sc_time;

namespace {

constexpr unsigned kMsixEntryBytes = 16;

PciConfigSpace make_config(const DeviceConfig& cfg) {
  PciIdentity id;
  id.vendor = id.subsystem_vendor = IrdmaDevice::kPciVendor;
  id.device = id.subsystem = uint16_t(IrdmaDevice::kPciDeviceBase + cfg.generation);
  id.revision = 2;
  id.class_code = 0x020000;  // Ethernet controller, as E810
  // E810's serial number is its port MAC with FF-FF in the middle, as lspci shows it.
  id.serial_number = (cfg.mac >> 24) << 40 | uint64_t(0xFFFF) << 24 | (cfg.mac & 0xFFFFFF);
  std::array<PciBar, 6> bars{};
  bars[0] = {BAR0_SIZE, true, true};
  bars[MSIX_BAR] = {BAR3_SIZE, true, true};
  return PciConfigSpace(id, bars, {cfg.msix_vectors(), MSIX_BAR, MSIX_TABLE_OFFSET, MSIX_PBA_OFFSET});
}

}  // namespace

IrdmaDevice::IrdmaDevice(sc_core::sc_module_name name, const DeviceConfig& cfg,
                         sc_time quantum, trace::TraceLog& trace,
                         const CqWriterFactory& make_cq_writer)
    : sc_module(name),
      pci("pci"),
      dma("dma"),
      cfg_(cfg),
      trace_(trace),
      config_(make_config(cfg)),
      time_(cfg.clock_mhz, quantum),
      dma_port_(dma, time_, config_),
      hmc_(cfg_, dma_port_),
      vectors_(time_, cfg.msix_vectors(),
               [this](unsigned vector, uint64_t due_ps) {
                 if (due_ps > time_.now_ps()) trace_.coverage().hit(trace::Cover::ceq, {4});
                 // Due by the engine's clock (which is past the CEQE's issue): right behind it.
                 if (due_ps <= time_.now_ps())
                   raise_msix(vector, true);
                 else
                   msix_at(vector, due_ps);
               },
               [this](unsigned vector) { return ceq_.unacked(vector) || aeq_.unconsumed(vector); }),
      ceq_(cfg_, dma_port_, time_, trace, vectors_),
      aeq_(dma_port_, time_, trace, vectors_),
      cq_(dma_port_, time_, ceq_, aeq_, trace, make_cq_writer),
      stags_(cfg_.max_stags),
      qp_(cfg_, dma_port_, time_, cq_, aeq_, stags_, hmc_, trace),
      cqp_(cfg_, dma_port_, time_, hmc_, cq_, qp_, stags_, ceq_, aeq_, trace),
      ready_at_ps_(uint64_t(cfg.ready_after_us) * 1'000'000),
      msix_(cfg.msix_vectors()) {
  pci.register_b_transport(this, &IrdmaDevice::pci_b_transport);
  dma.register_invalidate_direct_mem_ptr(this, &IrdmaDevice::invalidate_dma_dmi);
  qp_.set_between_wqes([this] { run_due_control(); });
  SC_THREAD(engine_thread);
  if (cfg_.function_reset_at_ns) SC_THREAD(reset_fault_thread);
  SC_METHOD(send_due_msix);
  sensitive << msix_timer_;
  dont_initialize();
}

void IrdmaDevice::pci_b_transport(tlm::tlm_generic_payload& trans, sc_time& delay) {
  const uint64_t region = trans.get_address() >> kRegionShift;
  const uint64_t off = trans.get_address() & ((1ull << kRegionShift) - 1);
  const uint32_t len = trans.get_data_length();
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
  if (trans.get_byte_enable_ptr()) {
    trans.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
  } else if (region == kConfigRegion) {
    if (!config_access(trans, off)) trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  } else if (!config_.memory_enabled() || engines_reset_pending_) {
    // Memory decode off, or the function still in reset: it does not claim the access (an
    // unsupported request).
    trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    if (refusing_since_reset_) {
      counters_.mmio_refused_in_reset++;
      return;
    }
  } else if (region == MSIX_BAR) {
    if (!msix_access(trans, off)) trans.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
  } else if (region != 0 || (len != 4 && len != 8) || off + len > BAR0_SIZE) {
    trans.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
  } else if (trans.is_write()) {
    counters_.mmio_writes++;
    uint64_t v = 0;
    std::memcpy(&v, trans.get_data_ptr(), len);
    const uint64_t due_ps = (sc_core::sc_time_stamp() + delay).value();
    write_reg(off, uint32_t(v), due_ps);
    if (len == 8) write_reg(off + 4, uint32_t(v >> 32), due_ps);
  } else {
    counters_.mmio_reads++;
    uint64_t v = read_reg(off);
    if (len == 8) v |= uint64_t(read_reg(off + 4)) << 32;
    std::memcpy(trans.get_data_ptr(), &v, len);
  }
  if (!trans.is_response_ok()) counters_.bad_mmio++;
}

bool IrdmaDevice::config_access(tlm::tlm_generic_payload& trans, uint64_t off) {
  const uint32_t len = trans.get_data_length();
  if (off >= PciConfigSpace::kSize) return false;
  uint32_t v = 0;
  if (trans.is_write()) {
    std::memcpy(&v, trans.get_data_ptr(), std::min(len, 4u));
    if (!config_.write(uint32_t(off), len, v)) return false;
    if (PciConfigSpace::initiates_flr(uint32_t(off), len, v)) {
      function_reset("flr");
      return true;
    }
    if (config_.memory_enabled()) refusing_since_reset_ = false;  // the host has taken the function back
    send_unmasked_pending();  // the function mask may be off now
    return true;
  }
  if (!config_.read(uint32_t(off), len, v)) return false;
  std::memcpy(trans.get_data_ptr(), &v, len);
  return true;
}

// The MSI-X table: 16-byte entries of address, data and vector control, 4-byte accesses.
// A message raised while its entry or the function is masked is held, its PBA bit set, and
// sent when both are unmasked (PCIe's MSI-X rules); the PBA is read-only.
bool IrdmaDevice::msix_access(tlm::tlm_generic_payload& trans, uint64_t off) {
  if (trans.get_data_length() != 4 || off % 4) return false;
  uint32_t v = 0;
  if (off >= MSIX_PBA_OFFSET && off < MSIX_PBA_OFFSET + (msix_.size() + 63) / 64 * 8) {
    if (trans.is_write()) return false;
    const size_t first = (off - MSIX_PBA_OFFSET) * 8;
    for (size_t bit = 0; bit < 32 && first + bit < msix_.size(); bit++)
      v |= uint32_t(msix_[first + bit].pending) << bit;
    std::memcpy(trans.get_data_ptr(), &v, 4);
    return true;
  }
  if (off >= MSIX_TABLE_OFFSET + msix_.size() * kMsixEntryBytes) return false;
  MsixEntry& e = msix_[(off - MSIX_TABLE_OFFSET) / kMsixEntryBytes];
  const unsigned field = (off - MSIX_TABLE_OFFSET) % kMsixEntryBytes;
  if (trans.is_write()) {
    std::memcpy(&v, trans.get_data_ptr(), 4);
    switch (field) {
      case 0: e.addr = (e.addr & ~0xFFFFFFFFull) | v; break;
      case 4: e.addr = (e.addr & 0xFFFFFFFFull) | uint64_t(v) << 32; break;
      case 8: e.data = v; break;
      case 12:
        e.ctrl = v & 1;
        send_unmasked_pending();
        break;
    }
    return true;
  }
  switch (field) {
    case 0: v = uint32_t(e.addr); break;
    case 4: v = uint32_t(e.addr >> 32); break;
    case 8: v = e.data; break;
    case 12: v = e.ctrl; break;
  }
  std::memcpy(trans.get_data_ptr(), &v, 4);
  return true;
}

uint32_t IrdmaDevice::read_reg(uint64_t off) {
  switch (off) {
    case CQPTAIL: return cqp_.tail_reg();
    case CCQPSTATUS: return cqp_.status_reg();
    case CQPERRCODES: return cqp_.errcodes_reg();
    case CCQPHIGH: return ccqp_high_;
    case CCQPLOW: return ccqp_low_;
    case PFINT_AEQCTL: return aeq_.read_aeqctl();
    case GLPE_CPUSTATUS0:
    case GLPE_CPUSTATUS0 + 4:
    case GLPE_CPUSTATUS0 + 8:
      return sc_core::sc_time_stamp().value() >= ready_at_ps_ ? CPUSTATUS_READY : 0;
    case GLPCI_LBARCTRL: return uint32_t(cfg_.pe_db_size) << LBARCTRL_PE_DB_SIZE_SHIFT;
    default: break;
  }
  if (off >= GLINT_CEQCTL && off < GLINT_CEQCTL + 4ull * cfg_.num_ceqs && off % 4 == 0)
    return ceq_.read_ceqctl(uint32_t((off - GLINT_CEQCTL) / 4));
  if (off >= GLINT_DYN_CTL && off < GLINT_DYN_CTL + 4 * msix_.size() && off % 4 == 0)
    return vectors_.read_dyn_ctl(unsigned((off - GLINT_DYN_CTL) / 4));
  return 0;
}

void IrdmaDevice::write_reg(uint64_t off, uint32_t value, uint64_t due_ps) {
  const uint64_t user_db = cfg_.pe_db_size == 1 ? USER_DB_PAGE_4M : USER_DB_PAGE_8M;
  if (off == user_db) off = WQEALLOC;
  if (off == user_db + USER_DB_CQ_OFFSET) off = CQARM;
  switch (off) {
    case CCQPHIGH: ccqp_high_ = value; return;
    case CCQPLOW:
      ccqp_low_ = value;
      if (ccqp_high_ == 0 && ccqp_low_ == 0)
        queue(WorkKind::cqp_stop, 0, due_ps);
      else
        queue(WorkKind::cqp_start, uint64_t(ccqp_high_) << 32 | ccqp_low_, due_ps);
      return;
    case CQPDB: queue(WorkKind::cqp_doorbell, value, due_ps); return;
    case WQEALLOC:
      counters_.sq_doorbells++;
      queue_sq(WorkKind::sq_doorbell, get(value, WQEALLOC_QPID), due_ps);
      return;
    case CQARM:
      counters_.cq_arms++;
      control(WorkKind::cq_arm, value, due_ps);
      return;
    case CQACK:
      counters_.cq_acks++;
      control(WorkKind::cq_ack, value, due_ps);
      return;
    case AEQALLOC: control(WorkKind::aeq_alloc, value, due_ps); return;
    case PFINT_AEQCTL: aeq_.write_aeqctl(value); return;
    default: break;
  }
  if (off >= GLINT_CEQCTL && off < GLINT_CEQCTL + 4ull * cfg_.num_ceqs && off % 4 == 0) {
    ceq_.write_ceqctl(uint32_t((off - GLINT_CEQCTL) / 4), value);
    return;
  }
  if (off >= GLINT_DYN_CTL && off < GLINT_DYN_CTL + 4 * msix_.size() && off % 4 == 0) {
    control(WorkKind::dyn_ctl, (off - GLINT_DYN_CTL) / 4 << 32 | value, due_ps);
    return;
  }
  counters_.bad_mmio++;
}

void IrdmaDevice::queue(WorkKind kind, uint64_t arg, uint64_t due_ps) {
  work_.push({due_ps, work_seq_++, kind, arg});
  work_ev_.notify(sc_core::SC_ZERO_TIME);
}

// A QP's SQ is queued for service once per kind: a doorbell finds every WQE posted by the
// time it runs, and an SQ waiting out an RNR has one retry timer. Queuing each doorbell
// and each stalled run separately would let retries pile up faster than they run.
void IrdmaDevice::queue_sq(WorkKind kind, uint64_t qp_id, uint64_t due_ps) {
  if (sq_queued_.insert({qp_id, kind}).second) queue(kind, qp_id, due_ps);
}

void IrdmaDevice::msix_at(unsigned vector, uint64_t due_ps) {
  const uint64_t kernel = sc_core::sc_time_stamp().value();
  if (msix_due_.empty() || due_ps < msix_due_.top().first)
    msix_timer_.notify(sc_core::sc_time::from_value(due_ps > kernel ? due_ps - kernel : 0));
  msix_due_.push({due_ps, vector});
}

void IrdmaDevice::send_due_msix() {
  const uint64_t now = sc_core::sc_time_stamp().value();
  while (!msix_due_.empty() && msix_due_.top().first <= now) {
    const unsigned vector = msix_due_.top().second;
    msix_due_.pop();
    raise_msix(vector, false);
  }
  if (!msix_due_.empty()) msix_timer_.notify(sc_core::sc_time::from_value(msix_due_.top().first - now));
}

void IrdmaDevice::send_unmasked_pending() {
  if (msix_out || !config_.msix_enabled() || config_.msix_function_masked()) return;
  for (unsigned vector = 0; vector < msix_.size(); vector++) {
    MsixEntry& e = msix_[vector];
    if (!e.pending || (e.ctrl & 1)) continue;
    e.pending = false;
    counters_.msix_sent_on_unmask++;
    schedule_msix(vector);  // from the engine's side, not inside this register access
  }
}

void IrdmaDevice::raise_msix(unsigned vector, bool from_engine) {
  if (vector >= msix_.size() || !config_.msix_enabled() || config_.msix_function_masked() ||
      (!msix_out && ((msix_[vector].ctrl & 1) || msix_[vector].addr == 0))) {
    counters_.msix_masked++;
    // Masked, it waits in the PBA; with MSI-X off or the entry never programmed, it is lost.
    if (vector < msix_.size() && !msix_out && config_.msix_enabled() && msix_[vector].addr)
      msix_[vector].pending = true;
    return;
  }
  if (msix_out) {
    if (msix_out(vector)) {
      counters_.msix_sent++;
      trace_.coverage().hit(trace::Cover::ceq, {3});
    } else {
      counters_.msix_masked++;
    }
    return;
  }
  counters_.msix_sent++;
  trace_.coverage().hit(trace::Cover::ceq, {3});
  if (from_engine)
    dma_port_.write(msix_[vector].addr, &msix_[vector].data, 4);
  else
    dma_port_.write_now(msix_[vector].addr, &msix_[vector].data, 4);
}

void IrdmaDevice::control(WorkKind kind, uint64_t arg, uint64_t due_ps) {
  control_.push_back({due_ps, work_seq_++, kind, arg});
  work_ev_.notify(sc_core::SC_ZERO_TIME);
}

void IrdmaDevice::run_due_control() {
  while (!control_.empty() && control_.front().due_ps <= time_.now_ps()) {
    const Work w = control_.front();
    control_.pop_front();
    run(w);
  }
}

void IrdmaDevice::function_reset(const char* cause) {
  const uint64_t now = sc_core::sc_time_stamp().value();
  counters_.function_resets++;
  if (!counters_.first_function_reset_ps) counters_.first_function_reset_ps = std::max<uint64_t>(now, 1);
  trace_.event(now, "function_reset").str("cause", cause);
  config_.reset();
  std::fill(msix_.begin(), msix_.end(), MsixEntry{});
  msix_due_ = {};
  ccqp_high_ = ccqp_low_ = 0;
  ready_at_ps_ = now + uint64_t(cfg_.ready_after_us) * 1'000'000;
  engines_reset_pending_ = true;
  refusing_since_reset_ = true;
  work_ev_.notify(sc_core::SC_ZERO_TIME);
}

void IrdmaDevice::reset_engines() {
  // What the host queued before the reset dies with it, and so does what the work in hand
  // queued after it.
  work_ = {};
  control_.clear();
  sq_queued_.clear();
  cqp_.reset();
  qp_.reset();
  cq_.reset();
  ceq_.reset();
  aeq_.reset();
  hmc_.reset();
  stags_.reset();
  vectors_.reset();
  engines_reset_pending_ = false;
  trace_.event(time_.now_ps(), "function_reset_done");
}

void IrdmaDevice::reset_fault_thread() {
  const uint64_t at_ps = *cfg_.function_reset_at_ns * 1000;
  const uint64_t now = sc_core::sc_time_stamp().value();
  if (at_ps > now) sc_core::wait(sc_time::from_value(at_ps - now));
  // Before the host enabled it the function is as a reset leaves it: nothing to strike.
  if (config_.memory_enabled()) function_reset("fault");
}

void IrdmaDevice::engine_thread() {
  for (;;) {
    if (engines_reset_pending_) reset_engines();
    run_due_control();
    if (!control_.empty() && (work_.empty() || control_.front().due_ps < work_.top().due_ps)) {
      time_.idle_wait(work_ev_, control_.front().due_ps);
      continue;
    }
    if (work_.empty()) {
      time_.idle_wait(work_ev_);
      continue;
    }
    const Work w = work_.top();
    if (w.due_ps > time_.now_ps()) {
      // Idle until the next item arrives, or an earlier one is queued.
      time_.idle_wait(work_ev_, w.due_ps);
      continue;
    }
    work_.pop();
    run(w);
  }
}

void IrdmaDevice::run(const Work& w) {
  time_.cycles(cfg_.cycles.doorbell);
  switch (w.kind) {
    case WorkKind::cqp_start: cqp_.start(w.arg); break;
    case WorkKind::cqp_stop: cqp_.stop(); break;
    case WorkKind::cqp_doorbell: cqp_.doorbell(uint32_t(w.arg)); break;
    case WorkKind::sq_retry:
      sq_queued_.erase({w.arg, w.kind});
      // The device's own retry after RNR: the QP may have been destroyed meanwhile.
      if (!qp_.exists(uint32_t(w.arg))) break;
      [[fallthrough]];
    case WorkKind::sq_doorbell:
      if (w.kind == WorkKind::sq_doorbell) sq_queued_.erase({w.arg, w.kind});
      if (qp_.process_sq(uint32_t(w.arg)) == QpEngine::Result::rnr)
        queue_sq(WorkKind::sq_retry, w.arg,
                 time_.now_ps() + (time_.period() * double(cfg_.rnr_retry_cycles)).value());
      break;
    case WorkKind::cq_arm:
      if (!cq_.arm(uint32_t(w.arg))) {
        counters_.bad_doorbells++;
        trace_.event(time_.now_ps(), "bad_doorbell").num("cq", w.arg);
      }
      break;
    case WorkKind::cq_ack: cq_.ack(uint32_t(w.arg)); break;
    case WorkKind::dyn_ctl: vectors_.write_dyn_ctl(unsigned(w.arg >> 32), uint32_t(w.arg)); break;
    case WorkKind::aeq_alloc: aeq_.consumed(uint32_t(w.arg)); break;
  }
}

}  // namespace irdma_sim::device
