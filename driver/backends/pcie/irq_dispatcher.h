// hal::Interrupts over a PciTransport: MSI-X vectors as eventfds, one epoll thread that
// runs each vector's handler (the handler runs on that thread, as in interrupt context).
//
// alloc_irq_vectors works as Linux's PCI core: the MSI-X capability in config space gives
// the table size, its Enable bit is set, and every vector gets its eventfd in one
// set_irq_eventfds, since kernel VFIO before dynamic MSI-X (6.1) cannot grow the set
// later. The MSI-X table itself is the transport's (VFIO forbids writing it). An eventfd
// that fires for a vector with no handler is counted as spurious. free_irq returns only
// once the vector's handler is not running (synchronize_irq), so a handler never runs
// after free_irq returned. The function's error IRQ (VFIO's ERR index: the host's AER
// reports an uncorrectable error) has an eventfd of its own, on the same thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "driver/backends/pci_transport.h"
#include "driver/backends/unique_fd.h"
#include "driver/hal/irq.h"
#include "driver/hal/pci_config.h"

namespace pcie {

class IrqDispatcher final : public hal::Interrupts {
 public:
  // Starts the epoll thread. `transport` and `config` (the same function's config space)
  // outlive this. Throws PciTransportError when the OS refuses the epoll or the thread.
  IrqDispatcher(PciTransport& transport, hal::PciConfig& config);
  // Stops and joins the epoll thread (after a running handler returns), then takes the
  // eventfds from the transport and disables MSI-X.
  ~IrqDispatcher() override;
  IrqDispatcher(const IrqDispatcher&) = delete;
  IrqDispatcher& operator=(const IrqDispatcher&) = delete;

  // Also -EINVAL when vectors are already allocated or max < min, -EIO when the transport
  // refuses, -errno when the OS has no eventfds left.
  int alloc_irq_vectors(unsigned min, unsigned max) override;
  void free_irq_vectors() override;
  unsigned num_vectors() const override;
  int request_irq(unsigned vector, Handler handler) override;
  void free_irq(unsigned vector) override;
  // Also -EOPNOTSUPP when the transport offers no error IRQ, -EIO when it refuses. Null
  // takes the handler away once it is not running.
  int request_error_irq(std::function<void()> handler) override;

  uint64_t delivered() const { return delivered_.load(std::memory_order_relaxed); }  // handler calls
  uint64_t spurious() const { return spurious_.load(std::memory_order_relaxed); }

 private:
  static constexpr unsigned kNoVector = ~0u;
  static constexpr unsigned kErrorVector = ~1u;  // dispatch()'s name for the error IRQ

  void run();
  void dispatch(unsigned vector);
  void disable_msix(uint8_t cap, uint16_t flags);
  void disable_error_irq();  // mutex_ held

  PciTransport& transport_;
  hal::PciConfig& config_;
  UniqueFd epoll_;
  UniqueFd wake_;  // written once, to stop the thread
  std::vector<UniqueFd> eventfds_;  // one per allocated vector
  UniqueFd error_eventfd_;
  std::shared_ptr<const std::function<void()>> error_handler_;

  mutable std::mutex mutex_;
  std::condition_variable handler_returned_;
  std::vector<std::shared_ptr<const Handler>> handlers_;  // null: no handler
  unsigned running_ = kNoVector;  // whose handler the epoll thread is in
  uint8_t msix_cap_ = 0;          // set once vectors are allocated
  uint16_t msix_flags_ = 0;       // its Message Control before we enabled it

  std::atomic<uint64_t> delivered_{0};
  std::atomic<uint64_t> spurious_{0};
  std::thread thread_;
};

}  // namespace pcie
