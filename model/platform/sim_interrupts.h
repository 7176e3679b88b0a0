// hal::Interrupts on SystemC: the host's interrupt controller. request_irq programs the
// device's MSI-X table entry (as the PCI core does); MSI writes the link delivers are
// dispatched, in order of arrival time, to the handler in the interrupt thread.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <tuple>
#include <vector>

#include <systemc>

#include "model/sc_compat.h"

#include "driver/hal/bar.h"
#include "driver/hal/irq.h"

namespace irdma_sim::platform {

class SimInterrupts final : public sc_core::sc_module, public hal::Interrupts {
 public:
  IRDMA_SC_HAS_PROCESS(SimInterrupts);
  SimInterrupts(sc_core::sc_module_name name, hal::Bar& bar0, uint64_t msix_table_offset,
                unsigned vectors);

  unsigned num_vectors() const override { return unsigned(handlers_.size()); }
  int request_irq(unsigned vector, Handler handler) override;
  void free_irq(unsigned vector) override;

  // From the link: an MSI write of `data` arriving at `at`.
  void deliver(uint32_t data, sc_core::sc_time at);
  uint64_t delivered() const { return delivered_; }
  uint64_t spurious() const { return spurious_; }

 private:
  void dispatch_thread();

  hal::Bar& bar0_;
  uint64_t table_;
  std::vector<Handler> handlers_;
  // (arrival, order of delivery, data), earliest first: a message that arrives sooner is
  // handled sooner, whatever the order the link handed them over in.
  std::priority_queue<std::tuple<sc_core::sc_time, uint64_t, uint32_t>,
                      std::vector<std::tuple<sc_core::sc_time, uint64_t, uint32_t>>, std::greater<>>
      pending_;
  uint64_t deliveries_ = 0;
  sc_core::sc_event arrived_;
  uint64_t delivered_ = 0;
  uint64_t spurious_ = 0;
};

}  // namespace irdma_sim::platform
