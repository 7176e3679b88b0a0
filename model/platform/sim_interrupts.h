// hal::Interrupts on SystemC: the host's PCI core and interrupt controller.
// alloc_irq_vectors finds the function's MSI-X capability and enables it, request_irq
// programs the vector's table entry in the BAR the capability names; MSI writes the link
// delivers are dispatched, in order of arrival time, to the handler in the interrupt thread.
// With config.link.faults.msix_mask_rate, the host masks a vector's entry as its interrupt
// comes in, for a while, as an OS moving an interrupt between CPUs does. Errors the root port
// reports (AER) go to the error handler, in a thread of their own.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <tuple>
#include <vector>

#include <systemc>

#include "model/sc_compat.h"

#include "driver/hal/bar.h"
#include "driver/hal/irq.h"
#include "driver/hal/pci_config.h"
#include "model/platform/host_memory.h"
#include "model/platform/link_faults.h"

namespace irdma_sim::platform {

class SimInterrupts final : public sc_core::sc_module, public hal::Interrupts {
 public:
  IRDMA_SC_HAS_PROCESS(SimInterrupts);
  // `bars`: the function's memory BARs as the host maps them (null where there is none).
  // `memory`: the host's, whose held device writes a handler sees land as it starts.
  SimInterrupts(sc_core::sc_module_name name, hal::PciConfig& config, std::array<hal::Bar*, 6> bars,
                HostMemory& memory, const LinkFaultConfig& faults = {});

  int alloc_irq_vectors(unsigned min, unsigned max) override;
  unsigned num_vectors() const override { return unsigned(handlers_.size()); }
  int request_irq(unsigned vector, Handler handler) override;
  void free_irq(unsigned vector) override;
  void free_irq_vectors() override;
  int request_error_irq(std::function<void()> handler) override;

  // From the link: an MSI write of `data` arriving at `at`.
  void deliver(uint32_t data, sc_core::sc_time at);
  // From the link: the root port reports an uncorrectable error of the function at `at`.
  void pci_error(sc_core::sc_time at);
  uint64_t pci_errors() const { return pci_errors_; }
  uint64_t delivered() const { return delivered_; }
  uint64_t spurious() const { return spurious_; }
  uint64_t masked_by_fault() const { return faults_ ? faults_->counters().msix_masked : 0; }

 private:
  void dispatch_thread();
  void error_thread();
  void unmask_thread();
  void write_vector_ctrl(unsigned vector, uint32_t ctrl);

  hal::PciConfig& config_;
  std::array<hal::Bar*, 6> bars_;
  HostMemory& memory_;
  hal::Bar* table_bar_ = nullptr;
  uint64_t table_ = 0;
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
  std::optional<LinkFaults> faults_;
  // (when, vector): entries a fault masked, to be unmasked then.
  std::priority_queue<std::pair<sc_core::sc_time, unsigned>, std::vector<std::pair<sc_core::sc_time, unsigned>>,
                      std::greater<>>
      unmask_;
  sc_core::sc_event unmask_due_;
  std::function<void()> error_handler_;
  std::priority_queue<sc_core::sc_time, std::vector<sc_core::sc_time>, std::greater<>> errors_;  // when each arrives
  sc_core::sc_event error_arrived_;
  uint64_t pci_errors_ = 0;
};

}  // namespace irdma_sim::platform
