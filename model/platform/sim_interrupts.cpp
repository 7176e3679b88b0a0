#include "model/platform/sim_interrupts.h"

#include <cerrno>

#include "model/platform/pcie_link.h"

namespace irdma_sim::platform {

namespace {

constexpr unsigned kEntryBytes = 16;

}  // namespace

SimInterrupts::SimInterrupts(sc_core::sc_module_name name, hal::Bar& bar0,
                             uint64_t msix_table_offset, unsigned vectors)
    : sc_module(name), bar0_(bar0), table_(msix_table_offset), handlers_(vectors) {
  SC_THREAD(dispatch_thread);
  set_stack_size(1 << 20);  // handlers run driver code
}

int SimInterrupts::request_irq(unsigned vector, Handler handler) {
  if (vector >= handlers_.size() || handlers_[vector] || !handler) return -EINVAL;
  handlers_[vector] = std::move(handler);
  // Address in the MSI window, data = vector; then unmask.
  const uint64_t entry = table_ + uint64_t(vector) * kEntryBytes;
  bar0_.write32(entry + 0, uint32_t(kMsiBase));
  bar0_.write32(entry + 4, uint32_t(kMsiBase >> 32));
  bar0_.write32(entry + 8, vector);
  bar0_.write32(entry + 12, 0);
  return 0;
}

void SimInterrupts::free_irq(unsigned vector) {
  if (vector >= handlers_.size() || !handlers_[vector]) return;
  bar0_.write32(table_ + uint64_t(vector) * kEntryBytes + 12, 1);  // mask
  handlers_[vector] = nullptr;
}

void SimInterrupts::deliver(uint32_t data, sc_core::sc_time at) {
  pending_.emplace(at, deliveries_++, data);
  arrived_.notify(sc_core::SC_ZERO_TIME);
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
    if (vector < handlers_.size() && handlers_[vector]) {
      delivered_++;
      handlers_[vector](vector);
    } else {
      spurious_++;
    }
  }
}

}  // namespace irdma_sim::platform
