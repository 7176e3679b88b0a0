// How many times the SystemC kernel switched into a thread process (resumed it, from the
// scheduler or straight from another thread; the switch back is the same activation's):
// the kernel's own cost per simulated event, which the bench reports per completion.
#pragma once

#include <cstdint>

namespace irdma_sim::bench {

uint64_t thread_switches();

}  // namespace irdma_sim::bench
