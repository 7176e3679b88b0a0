// MSI-X vectors delivered to handlers.
#pragma once

#include <cerrno>
#include <functional>

namespace hal {

class Interrupts {
 public:
  using Handler = std::function<void(unsigned vector)>;
  virtual ~Interrupts() = default;
  // pci_alloc_irq_vectors for MSI-X: finds the function's MSI-X capability, enables it and
  // returns how many vectors the driver may use (at most `max`), or -ENOSPC when the
  // function has fewer than `min`, -ENODEV when it has no MSI-X.
  virtual int alloc_irq_vectors(unsigned min, unsigned max) = 0;
  virtual unsigned num_vectors() const = 0;  // as allocated; 0 before
  // Returns 0, or -EINVAL for a vector not allocated or taken.
  virtual int request_irq(unsigned vector, Handler handler) = 0;
  virtual void free_irq(unsigned vector) = 0;
  // pci_free_irq_vectors: MSI-X off and every vector given back (their handlers freed
  // first), so that a driver probed later allocates them anew.
  virtual void free_irq_vectors() = 0;
  // The function's uncorrectable PCIe errors as the host's AER reports them (Linux's
  // pci_error_handlers::error_detected; VFIO's error IRQ): `handler` runs on a thread of
  // the host's for each, null takes it away. -EOPNOTSUPP where none are reported.
  virtual int request_error_irq(std::function<void()> handler) { return -EOPNOTSUPP; }
};

}  // namespace hal
