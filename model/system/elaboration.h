// What every SystemC world of this project does once per process before it builds its
// modules, and the parts the in-process simulation and the served device share.
#pragma once

#include <memory>

#include "model/device/cqe_format.h"
#include "model/device/device_config.h"

namespace irdma_sim::system {

// Claims the process's one elaboration (SystemC's rule) and quiets the kernel's banner and
// info reports. Throws std::logic_error naming `what` when the process already elaborated.
void begin_elaboration(const char* what);

// The CQE formatter the configuration names: the TLM one, or the Verilated RTL.
std::unique_ptr<device::CqeFormatter> make_formatter(const device::DeviceConfig& d);

}  // namespace irdma_sim::system
