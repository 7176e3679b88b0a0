#include "model/platform/pcie_link.h"

#include "model/device/pci_config.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace irdma_sim::platform {

using sc_core::sc_time;
using sc_core::SC_PS;

namespace {

// Simulated time in picoseconds (the kernel's resolution).
uint64_t ps(const sc_time& t) { return t.value(); }

// A faulted access's trace fields: what it was for, and the queue it was of.
void describe(trace::TraceLog::Event&& ev, const device::DmaPurpose& p, uint64_t addr, uint32_t len) {
  static const char* const kinds[] = {"other", "wqe_fetch", "cq_arm", "cqe_write", "ceqe_write", "aeqe_write",
                                      "payload_write"};
  static const char* const objects[] = {nullptr, "qp", "cq", "cq", "ceq", nullptr, "qp"};
  static_assert(std::size(kinds) == device::DmaPurpose::payload_write + 1 && std::size(objects) == std::size(kinds));
  ev.str("purpose", kinds[p.kind]);
  if (objects[p.kind]) ev.num(objects[p.kind], p.object);
  ev.addr("addr", addr).num("len", len);
}

}  // namespace

PcieLink::PcieLink(sc_core::sc_module_name name, const LinkConfig& cfg, bool defer_posted_writes,
                   trace::TraceLog& trace)
    : sc_module(name),
      host_mmio("host_mmio"),
      dev_bar("dev_bar"),
      dev_dma("dev_dma"),
      host_mem("host_mem"),
      cfg_(cfg),
      defer_(defer_posted_writes),
      trace_(trace),
      mmio_latency_(cfg.mmio_latency_ns * 1000, SC_PS),
      dma_latency_(cfg.dma_latency_ns * 1000, SC_PS),
      byte_ps_(1000.0 / cfg.bandwidth_gbytes) {
  read_request_ = serialisation(0, cfg.max_read_request_bytes);
  for (uint32_t bytes = 0; bytes < payload_times_.size(); bytes++)
    payload_times_[bytes] = serialisation(bytes, cfg.max_payload_bytes);
  host_mmio.register_b_transport(this, &PcieLink::mmio_b_transport);
  dev_dma.register_b_transport(this, &PcieLink::dma_b_transport);
  dev_dma.register_get_direct_mem_ptr(this, &PcieLink::dma_get_dmi);
  host_mem.register_invalidate_direct_mem_ptr(this, &PcieLink::dma_invalidate_dmi);
  SC_METHOD(land_on_arrival);
  sensitive << posted_due_;
  dont_initialize();
  if (cfg.faults.writes() && !defer_)
    throw std::invalid_argument(
        "link faults on posted writes (posted_delay_rate, split_rate) need posted writes that land when they "
        "arrive: the approximate sync mode of the in-process simulation");
  if (cfg.faults.any()) faults_.emplace(cfg.faults);
}

sc_time PcieLink::payload_time(uint32_t bytes) const {
  return bytes < payload_times_.size() ? payload_times_[bytes] : serialisation(bytes, cfg_.max_payload_bytes);
}

sc_time PcieLink::serialisation(uint32_t bytes, uint32_t max_tlp) const {
  const uint32_t tlps = std::max(1u, (bytes + max_tlp - 1) / max_tlp);
  const uint64_t wire_bytes = bytes + uint64_t(tlps) * cfg_.tlp_overhead_bytes;
  return sc_time::from_value(uint64_t(double(wire_bytes) * byte_ps_ + 0.5));
}

// Host accesses to the device's regions (pci_config.h's addressing). Memory writes are
// posted; configuration writes are not, so the CPU waits for their completion as for a read.
void PcieLink::mmio_b_transport(tlm::tlm_generic_payload& trans, sc_time& delay) {
  const uint32_t len = trans.get_data_length();
  const uint64_t region = trans.get_address() >> device::kRegionShift;
  const uint64_t off = trans.get_address() & ((1ull << device::kRegionShift) - 1);
  const bool config = region == device::kConfigRegion;
  uint64_t value = 0;
  if (trans.is_write()) {
    std::memcpy(&value, trans.get_data_ptr(), std::min<uint32_t>(len, 8));
    // The CPU pays the request's serialisation; the device sees it a latency later.
    delay += payload_time(len);
    sc_time arrival = delay + mmio_latency_;
    dev_bar->b_transport(trans, arrival);
    trace_event(ps(sc_core::sc_time_stamp() + delay + mmio_latency_), config ? "cfg_write" : "mmio_write",
                region, off, len, value);
    if (config) {  // non-posted: its completion comes back
      delay = arrival + payload_time(0) + mmio_latency_;
      behind_posted_writes(delay);
    }
  } else {
    sc_time at_device = delay + payload_time(0) + mmio_latency_;
    dev_bar->b_transport(trans, at_device);
    std::memcpy(&value, trans.get_data_ptr(), std::min<uint32_t>(len, 8));
    trace_event(ps(sc_core::sc_time_stamp() + at_device), config ? "cfg_read" : "mmio_read", region, off, len, value);
    delay = at_device + payload_time(len) + mmio_latency_;
    behind_posted_writes(delay);
  }
  if (!trans.is_response_ok()) mmio_errors_++;
}

// A completion does not pass the device's posted writes: a driver that reads a register the
// device set after writing memory finds the memory written, and one whose configuration
// write stopped the device mastering the bus finds all it wrote before landed.
void PcieLink::behind_posted_writes(sc_time& delay) const {
  if (posted_.empty()) return;
  // A write behind one that arrives later may have arrived already (held by the queue's order).
  const sc_time after_last = posted_.back().arrival + sc_time::from_value(1);
  if (after_last > sc_core::sc_time_stamp()) delay = std::max(delay, after_last - sc_core::sc_time_stamp());
}

void PcieLink::trace_event(uint64_t t_ps, const char* kind, uint64_t region, uint64_t off, uint32_t len,
                           uint64_t value) {
  auto ev = trace_.event(t_ps, kind);
  if (region != 0 && region != device::kConfigRegion) ev.num("bar", region);
  ev.addr("off", off).num("len", len).addr("value", value);
}

void PcieLink::dma_b_transport(tlm::tlm_generic_payload& trans, sc_time& delay) {
  const uint64_t addr = trans.get_address();
  const uint32_t len = trans.get_data_length();
  if (trans.is_write()) {
    delay += payload_time(len);
    sc_time arrival = sc_core::sc_time_stamp() + delay + dma_latency_;
    trans.set_response_status(tlm::TLM_OK_RESPONSE);
    if (addr >= kMsiBase && addr < kMsiBase + kMsiSize && len == 4) {
      uint32_t data;
      std::memcpy(&data, trans.get_data_ptr(), 4);
      // An MSI is a posted write: it does not pass those the device queued before it.
      if (!posted_.empty()) arrival = std::max(arrival, posted_.back().arrival + sc_time::from_value(1));
      trace_.event(ps(arrival), "msix").addr("addr", addr).num("data", data);
      msi(data, arrival);
      return;
    }
    // Posted: the device is told OK; an unmapped target shows up as a dma_error event.
    if (faults_ && dropped_write(trans, arrival)) return;
    if (defer_) {
      if (holder_) land_due_writes();  // nobody may look for a while: the credits free up
      if (posted_.size() >= kPostedCredits && initiator_can_wait()) {
        wait_for_posted_credit(delay);
        arrival = sc_core::sc_time_stamp() + delay + dma_latency_;
      }
      queue_write(arrival, addr, trans.get_data_ptr(), len);
    } else {
      apply_write(addr, trans.get_data_ptr(), len, ps(arrival));
      trans.set_dmi_allowed(write_.is_dmi_allowed());
    }
    return;
  }
  // Non-posted read: request out, completions back in max-payload TLPs. It may not pass
  // the device's earlier posted writes to the same bytes.
  apply_writes_overlapping(addr, len, delay);
  if (faults_ && aborted_read(trans, delay)) return;
  sc_time mem_delay = read_at_host(delay);
  host_mem->b_transport(trans, mem_delay);
  read_done(addr, len, trans.is_response_ok(), delay);
}

void PcieLink::msi(uint32_t data, sc_time arrival) {
  if (!on_msi) return;
  if (!faults_) {
    on_msi(data, arrival);
    return;
  }
  const LinkFaults::Msix fate = faults_->msix_fate();
  if (fate == LinkFaults::Msix::lose) {
    trace_.event(ps(arrival), "msix_lost").num("data", data);
    return;
  }
  if (const uint64_t late = faults_->msix_delay_ps()) {
    arrival += sc_time::from_value(late);
    trace_.event(ps(arrival), "msix_delayed").num("data", data).num("by_ps", late);
  }
  on_msi(data, arrival);
  if (fate == LinkFaults::Msix::duplicate) {
    arrival += dma_latency_;
    trace_.event(ps(arrival), "msix_duplicated").num("data", data);
    on_msi(data, arrival);
  }
}

bool PcieLink::msi_by_vector(unsigned vector, const std::function<bool(unsigned)>& send) {
  if (!faults_) return send(vector);
  const uint64_t now = ps(sc_core::sc_time_stamp());
  const LinkFaults::Msix fate = faults_->msix_fate();
  if (fate == LinkFaults::Msix::lose) {
    trace_.event(now, "msix_lost").num("data", vector);
    return true;
  }
  const bool sent = send(vector);
  if (sent && fate == LinkFaults::Msix::duplicate) {
    trace_.event(now, "msix_duplicated").num("data", vector);
    send(vector);
  }
  return sent;
}

void PcieLink::land_when_host_looks(HostMemory& memory) {
  holder_ = &memory;
  memory.hold_posted_writes(this);
}

std::optional<sc_time> PcieLink::next_arrival() const {
  if (posted_.empty()) return std::nullopt;
  return posted_.front().arrival;
}

uint64_t PcieLink::unlanded_from_ps() const {
  uint64_t from = ~0ull;
  for (const PostedWrite& w : posted_) from = std::min(from, ps(w.arrival));
  return from;
}

void PcieLink::queue_write(sc_time arrival, uint64_t addr, const uint8_t* data, uint32_t len) {
  const bool was_empty = posted_.empty();
  const auto push = [&](sc_time at, uint64_t a, const uint8_t* p, uint32_t n) {
    std::vector<uint8_t> bytes;
    if (!spare_.empty()) {
      bytes = std::move(spare_.back());
      spare_.pop_back();
    }
    bytes.assign(p, p + n);
    posted_.push_back({at, a, std::move(bytes)});
  };
  uint64_t gap_ps = 0;
  if (faults_) {
    // Held writes hold back what follows them: arrivals never go backwards.
    if (!was_empty) arrival = std::max(arrival, posted_.back().arrival);
    arrival += sc_time::from_value(faults_->posted_delay_ps());
    gap_ps = faults_->split_gap_ps(len);
  }
  if (!gap_ps) {
    push(arrival, addr, data, len);
  } else {
    const uint32_t pieces = (len + 7) / 8;
    for (uint32_t i = 0; i < pieces; i++) {
      const uint32_t piece = faults_->config().split_reversed ? pieces - 1 - i : i;
      const uint32_t off = piece * 8;
      push(arrival + sc_time::from_value(i * gap_ps), addr + off, data + off, std::min(8u, len - off));
    }
  }
  if (!was_empty) return;
  if (holder_)
    holder_->posted_write_arrives(posted_.front().arrival);
  else
    posted_due_.notify(posted_.front().arrival - sc_core::sc_time_stamp());
}

// A read the faults refuse never reaches memory: its Completer Abort comes back as a
// completion without data would.
bool PcieLink::aborted_read(tlm::tlm_generic_payload& trans, sc_time& delay) {
  const auto* ext = trans.get_extension<device::DmaPurposeExtension>();
  if (!ext || !faults_->read_fails(ext->purpose)) return false;
  const sc_time at_host = read_at_host(delay);
  describe(trace_.event(ps(sc_core::sc_time_stamp() + at_host), "dma_read_fault"), ext->purpose,
           trans.get_address(), trans.get_data_length());
  delay = at_host + payload_time(0) + dma_latency_;
  trans.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
  if (on_struck_access) on_struck_access(ext->purpose);
  return true;
}

// A posted write the faults refuse or poison never lands; the device is not told, the
// root port reports the error to the host when the write arrives.
bool PcieLink::dropped_write(tlm::tlm_generic_payload& trans, sc_time arrival) {
  const auto* ext = trans.get_extension<device::DmaPurposeExtension>();
  if (!ext) return false;
  const LinkFaults::Write fate = faults_->write_fate(ext->purpose);
  if (fate == LinkFaults::Write::lands) return false;
  const bool poisoned = fate == LinkFaults::Write::poisoned;
  describe(trace_.event(ps(arrival), poisoned ? "dma_write_poisoned" : "dma_write_fault"), ext->purpose,
           trans.get_address(), trans.get_data_length());
  if (on_struck_access) on_struck_access(ext->purpose);
  if (on_pci_error) on_pci_error(arrival);
  return true;
}

sc_time PcieLink::read_at_host(const sc_time& delay) const { return delay + read_request_ + dma_latency_; }

void PcieLink::read_done(uint64_t addr, uint32_t len, bool ok, sc_time& delay) {
  const sc_time at_host = read_at_host(delay);
  log_dma(ps(sc_core::sc_time_stamp() + at_host), false, ok, addr, len);
  delay = at_host + payload_time(len) + dma_latency_;
}

void PcieLink::log_dma(uint64_t t_ps, bool write, bool ok, uint64_t addr, uint32_t len) {
  if (ok) {
    trace_.event(t_ps, write ? "dma_write" : "dma_read").addr("addr", addr).num("len", len);
    return;
  }
  dma_errors_++;
  trace_.event(t_ps, "dma_error").str("op", write ? "write" : "read").addr("addr", addr).num("len", len);
}

void PcieLink::apply_write(uint64_t addr, const uint8_t* data, uint32_t len, uint64_t t_ps) {
  tlm::tlm_generic_payload& w = write_;
  w.set_command(tlm::TLM_WRITE_COMMAND);
  w.set_address(addr);
  w.set_data_ptr(const_cast<uint8_t*>(data));
  w.set_data_length(len);
  w.set_streaming_width(len);
  w.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_time zero = sc_core::SC_ZERO_TIME;
  w.set_dmi_allowed(false);
  host_mem->b_transport(w, zero);
  log_dma(t_ps, true, w.is_response_ok(), addr, len);
}

size_t PcieLink::last_posted_overlapping(uint64_t addr, uint32_t len) const {
  for (size_t i = posted_.size(); i > 0; i--) {
    const PostedWrite& w = posted_[i - 1];
    if (w.addr < addr + len && addr < w.addr + w.data.size()) return i;
  }
  return 0;
}

bool PcieLink::overlaps_posted(uint64_t addr, uint32_t len) const { return last_posted_overlapping(addr, len) != 0; }

void PcieLink::apply_writes_overlapping(uint64_t addr, uint32_t len, sc_time& delay) {
  size_t last = last_posted_overlapping(addr, len);  // one past the last queued write that overlaps
  // Landed writes are visible to the host at once (a spinning CPU wakes): an initiator
  // that runs ahead catches up first, so none lands before its sender's time.
  if (last && delay != sc_core::SC_ZERO_TIME) {
    sc_core::wait(delay);
    delay = sc_core::SC_ZERO_TIME;
    last = last_posted_overlapping(addr, len);  // some may have landed meanwhile
  }
  // A write the link holds back (a fault) holds the read of its bytes back with it.
  if (last && faults_ && initiator_can_wait() && posted_[last - 1].arrival > sc_core::sc_time_stamp()) {
    sc_core::wait(posted_[last - 1].arrival - sc_core::sc_time_stamp());
    last = last_posted_overlapping(addr, len);
  }
  for (; last > 0; last--) {
    PostedWrite& w = posted_.front();
    apply_write(w.addr, w.data.data(), uint32_t(w.data.size()), ps(w.arrival));
    spare_.push_back(std::move(w.data));
    posted_.pop_front();
  }
}

bool PcieLink::initiator_can_wait() {
  const sc_core::sc_process_handle me = sc_core::sc_get_current_process_handle();
  return me.valid() && me.proc_kind() != sc_core::SC_METHOD_PROC_;
}

void PcieLink::wait_for_posted_credit(sc_time& delay) {
  const sc_time issue = sc_core::sc_time_stamp() + delay;  // the initiator's own time
  const sc_time credit = std::max(issue, posted_.front().arrival);
  sc_core::wait(posted_.front().arrival - sc_core::sc_time_stamp());
  // Lands the oldest now, whichever process the kernel runs first.
  if (holder_)
    land_due_writes();
  else
    land_on_arrival();
  delay = credit - sc_core::sc_time_stamp();
}

void PcieLink::land_due_writes() {
  const sc_time now = sc_core::sc_time_stamp();
  while (!posted_.empty() && posted_.front().arrival <= now) {
    PostedWrite& w = posted_.front();
    apply_write(w.addr, w.data.data(), uint32_t(w.data.size()), ps(w.arrival));
    spare_.push_back(std::move(w.data));
    posted_.pop_front();
  }
}

void PcieLink::land_on_arrival() {
  land_due_writes();
  if (!posted_.empty()) posted_due_.notify(posted_.front().arrival - sc_core::sc_time_stamp());
}

bool PcieLink::dma_get_dmi(tlm::tlm_generic_payload& trans, tlm::tlm_dmi& dmi) {
  // Granted only on terms: a bare pointer would skip the link's timing and log.
  auto* ext = trans.get_extension<device::DmiTermsExtension>();
  if (!ext || !host_mem->get_direct_mem_ptr(trans, dmi) || !ext->terms) return false;
  memory_terms_ = ext->terms;
  ext->terms = this;
  // Deferred posted writes land through the link's queue, in order, and writes that may be
  // refused are transported, where their purpose is seen: reads only.
  if (defer_ || (faults_ && faults_->config().dropped_writes())) dmi.allow_read();
  return true;
}

bool PcieLink::read(uint64_t addr, uint32_t len, sc_time& delay) {
  // A read that may be refused is transported, where its purpose is seen.
  if ((faults_ && faults_->config().reads()) || overlaps_posted(addr, len) ||
      !memory_terms_->read(addr, len, delay))
    return false;
  read_done(addr, len, true, delay);
  return true;
}

void PcieLink::written(uint64_t addr, uint32_t len, sc_time& delay) {
  delay += payload_time(len);
  const uint64_t arrival = ps(sc_core::sc_time_stamp() + delay + dma_latency_);
  sc_time at_memory = sc_core::SC_ZERO_TIME;  // as a transported write is applied
  memory_terms_->written(addr, len, at_memory);
  log_dma(arrival, true, true, addr, len);
}

void PcieLink::dma_invalidate_dmi(sc_dt::uint64 start, sc_dt::uint64 end) {
  dev_dma->invalidate_direct_mem_ptr(start, end);
}

}  // namespace irdma_sim::platform
