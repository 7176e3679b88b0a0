// The simulated host's configuration (config.host): plain data, so what reads and writes
// scenarios needs no SystemC.
#pragma once

#include <cstddef>
#include <cstdint>

namespace irdma_sim::platform {

struct HostConfig {
  unsigned cpus = 1;
  double relax_timeout_ns = 1000;  // longest cpu_relax() with no memory write
  size_t thread_stack = 1 << 20; // driver code is not written for coroutine-sized stacks
  uint64_t memory_mb = 1024;     // DMA memory the host can give the driver, in MiB
};

}  // namespace irdma_sim::platform
