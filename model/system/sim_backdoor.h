// The in-process simulation's DeviceBackdoor: reads the model's engines directly.
#pragma once

#include "driver/backends/device_backdoor.h"
#include "model/device/irdma_device.h"
#include "model/platform/pcie_link.h"
#include "model/system/stimulus.h"

namespace irdma_sim::system {

class SimBackdoor final : public backends::DeviceBackdoor {
 public:
  // `link`: the model's link to its host, whose fault counts are read too. `recorder`: where
  // a recorded run notes the hooks it used, for its replay; may be null.
  SimBackdoor(device::IrdmaDevice& dev, platform::PcieLink& link, StimulusRecorder* recorder = nullptr)
      : dev_(dev), link_(link), recorder_(recorder) {}
  backends::DeviceCounters counters() override;
  bool inject_fault(uint32_t qp, uint64_t nth_request, uint16_t flush_minor) override {
    if (recorder_) recorder_->fault(qp, nth_request, flush_minor);
    return dev_.inject_fault(qp, nth_request, flush_minor);
  }
  void force_msix(unsigned vector) override {
    if (recorder_) recorder_->force_msix(vector);
    dev_.schedule_msix(vector);
  }
  void on_struck_access(std::function<void(const StruckAccess&)> listener) override;

 private:
  device::IrdmaDevice& dev_;
  platform::PcieLink& link_;
  StimulusRecorder* recorder_;
};

}  // namespace irdma_sim::system
