#include "model/platform/sim_interrupts.h"

#include <algorithm>
#include <cerrno>

#include "model/platform/pcie_link.h"

namespace irdma_sim::platform {

using namespace hal;

SimInterrupts::SimInterrupts(sc_core::sc_module_name name, PciConfig& config, std::array<Bar*, 6> bars,
                             HostMemory& memory, const LinkFaultConfig& faults)
    : sc_module(name), config_(config), bars_(bars), memory_(memory) {
  SC_THREAD(dispatch_thread);
  set_stack_size(1 << 20);  // handlers run driver code
  SC_THREAD(error_thread);
  set_stack_size(1 << 20);
  if (faults.msix_mask_rate > 0) {
    faults_.emplace(faults, LinkFaults::kHostStream);
    SC_THREAD(unmask_thread);
  }
}

void SimInterrupts::write_vector_ctrl(unsigned vector, uint32_t ctrl) {
  table_bar_->write32(table_ + uint64_t(vector) * PCI_MSIX_ENTRY_SIZE + PCI_MSIX_ENTRY_VECTOR_CTRL, ctrl);
}

void SimInterrupts::unmask_thread() {
  for (;;) {
    while (unmask_.empty()) sc_core::wait(unmask_due_);
    const auto [at, vector] = unmask_.top();
    if (at > sc_core::sc_time_stamp()) {
      sc_core::wait(at - sc_core::sc_time_stamp(), unmask_due_);
      continue;
    }
    unmask_.pop();
    if (vector < handlers_.size() && handlers_[vector]) write_vector_ctrl(vector, 0);  // a freed one stays masked
  }
}

int SimInterrupts::alloc_irq_vectors(unsigned min, unsigned max) {
  const uint8_t cap = config_.find_capability(PCI_CAP_ID_MSIX);
  if (!cap) return -ENODEV;
  const uint16_t flags = config_.read16(cap + PCI_MSIX_FLAGS);
  const uint32_t table = config_.read(cap + PCI_MSIX_TABLE, 4);
  const unsigned size = (flags & PCI_MSIX_FLAGS_QSIZE) + 1u;
  const unsigned bir = table & PCI_MSIX_TABLE_BIR;
  table_bar_ = bir < bars_.size() ? bars_[bir] : nullptr;
  if (!table_bar_) return -ENODEV;
  if (size < min) return -ENOSPC;
  table_ = table & ~PCI_MSIX_TABLE_BIR;
  config_.write(cap + PCI_MSIX_FLAGS, 2, (flags | PCI_MSIX_FLAGS_ENABLE) & ~PCI_MSIX_FLAGS_MASKALL);
  handlers_.assign(std::min(size, max), nullptr);
  return int(handlers_.size());
}

int SimInterrupts::request_irq(unsigned vector, Handler handler) {
  if (vector >= handlers_.size() || handlers_[vector] || !handler) return -EINVAL;
  handlers_[vector] = std::move(handler);
  // Address in the MSI window, data = vector; then unmask.
  const uint64_t entry = table_ + uint64_t(vector) * PCI_MSIX_ENTRY_SIZE;
  table_bar_->write32(entry + 0, uint32_t(kMsiBase));
  table_bar_->write32(entry + 4, uint32_t(kMsiBase >> 32));
  table_bar_->write32(entry + 8, vector);
  table_bar_->write32(entry + PCI_MSIX_ENTRY_VECTOR_CTRL, 0);
  return 0;
}

void SimInterrupts::free_irq(unsigned vector) {
  if (vector >= handlers_.size() || !handlers_[vector]) return;
  write_vector_ctrl(vector, PCI_MSIX_ENTRY_CTRL_MASKBIT);
  handlers_[vector] = nullptr;
}

void SimInterrupts::free_irq_vectors() {
  if (handlers_.empty()) return;
  handlers_.clear();
  if (const uint8_t cap = config_.find_capability(PCI_CAP_ID_MSIX))
    config_.write(cap + PCI_MSIX_FLAGS, 2, config_.read16(cap + PCI_MSIX_FLAGS) & ~PCI_MSIX_FLAGS_ENABLE);
}

// The dispatch thread wakes when the message arrives, not once to learn of it and again
// to meet it (an earlier pending notification stands; a later one never passes it).
void SimInterrupts::deliver(uint32_t data, sc_core::sc_time at) {
  pending_.emplace(at, deliveries_++, data);
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  arrived_.notify(at > now ? at - now : sc_core::SC_ZERO_TIME);
}

void SimInterrupts::dispatch_thread() {
  for (;;) {
    while (pending_.empty()) sc_core::wait(arrived_);
    const auto [at, order, vector] = pending_.top();
    if (at > sc_core::sc_time_stamp()) {
      sc_core::wait(at - sc_core::sc_time_stamp(), arrived_);
      continue;
    }
    pending_.pop();
    memory_.land_posted_writes();  // the CPU the handler runs on sees what arrived before
    if (vector < handlers_.size() && handlers_[vector]) {
      delivered_++;
      if (const uint64_t masked = faults_ ? faults_->msix_mask_ps() : 0) {
        write_vector_ctrl(vector, PCI_MSIX_ENTRY_CTRL_MASKBIT);
        unmask_.emplace(sc_core::sc_time_stamp() + sc_core::sc_time::from_value(masked), vector);
        unmask_due_.notify(sc_core::SC_ZERO_TIME);
      }
      handlers_[vector](vector);
    } else {
      spurious_++;
    }
  }
}

int SimInterrupts::request_error_irq(std::function<void()> handler) {
  error_handler_ = std::move(handler);
  return 0;
}

void SimInterrupts::pci_error(sc_core::sc_time at) {
  errors_.push(at);
  error_arrived_.notify(sc_core::SC_ZERO_TIME);
}

void SimInterrupts::error_thread() {
  for (;;) {
    while (errors_.empty()) sc_core::wait(error_arrived_);
    const sc_core::sc_time at = errors_.top();
    if (at > sc_core::sc_time_stamp()) {
      sc_core::wait(at - sc_core::sc_time_stamp(), error_arrived_);
      continue;
    }
    errors_.pop();
    pci_errors_++;
    memory_.land_posted_writes();
    if (error_handler_) error_handler_();
  }
}

}  // namespace irdma_sim::platform
