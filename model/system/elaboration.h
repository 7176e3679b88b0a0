// What every SystemC world of this project does once per process before it builds its
// modules, and the parts the in-process simulation and the served device share.
#pragma once

#include <functional>
#include <memory>

#include "model/device/cq_engine.h"
#include "model/device/cqe_format.h"
#include "model/device/device_config.h"

namespace irdma_sim::system {

// Claims the process's one elaboration (SystemC's rule) and quiets the kernel's banner and
// info reports. Throws std::logic_error naming `what` when the process already elaborated.
void begin_elaboration(const char* what);

// The CQE formatter the configuration names: the TLM one, or the Verilated RTL.
std::unique_ptr<device::CqeFormatter> make_formatter(const device::DeviceConfig& d);

// The CQ writer the configuration names: the TLM writer with the configured formatter (or
// the one `formatter` makes), or the Verilated CQ writer in lock-step with a TLM twin.
// Throws std::invalid_argument for an RTL block in a build without them, or a device with
// more CQs than the RTL has contexts.
using FormatterFactory = std::function<std::unique_ptr<device::CqeFormatter>()>;
device::CqWriterFactory make_cq_writer(const device::DeviceConfig& d, FormatterFactory formatter = {});

}  // namespace irdma_sim::system
