// round_up as Linux's linux/math.h has it, for the alignments DMA memory and rings ask
// for: `align` must be a power of two.
#pragma once

#include <cstdint>

namespace hal {

constexpr uint64_t round_up(uint64_t v, uint64_t align) { return (v + align - 1) & ~(align - 1); }

}  // namespace hal
