// MSI-X vectors delivered to handlers.
#pragma once

#include <functional>

namespace hal {

class Interrupts {
 public:
  using Handler = std::function<void(unsigned vector)>;
  virtual ~Interrupts() = default;
  virtual unsigned num_vectors() const = 0;
  // Returns 0, or -EINVAL for a vector the device does not have or that is taken.
  virtual int request_irq(unsigned vector, Handler handler) = 0;
  virtual void free_irq(unsigned vector) = 0;
};

}  // namespace hal
