// How many times the SystemC kernel switched coroutines (a thread process resumed or gave
// the CPU back): the kernel's own cost per simulated event, which the bench reports per
// completion.
#pragma once

#include <cstdint>

namespace irdma_sim::bench {

uint64_t thread_switches();

}  // namespace irdma_sim::bench
