// The in-process simulation's DeviceBackdoor: reads the model's engines directly.
#pragma once

#include "driver/backends/device_backdoor.h"
#include "model/device/irdma_device.h"

namespace irdma_sim::system {

class SimBackdoor final : public backends::DeviceBackdoor {
 public:
  explicit SimBackdoor(device::IrdmaDevice& dev) : dev_(dev) {}
  backends::DeviceCounters counters() override;
  bool inject_fault(uint32_t qp, uint64_t nth_request, uint16_t flush_minor) override {
    return dev_.inject_fault(qp, nth_request, flush_minor);
  }
  void force_msix(unsigned vector) override { dev_.schedule_msix(vector); }

 private:
  device::IrdmaDevice& dev_;
};

}  // namespace irdma_sim::system
