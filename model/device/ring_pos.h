// The device's position in a host ring whose entries carry a valid bit: the index and the
// pass polarity, which flips each time the index wraps, so an entry from the last pass
// never looks new (spec C).
#pragma once

#include <cstdint>

namespace irdma_sim::device {

struct RingPos {
  uint32_t idx = 0;
  bool polarity = true;  // a ring's first pass is polarity 1

  // Moves `n` entries on, at most to the ring's end (idx + n <= size); from the end back to
  // entry 0 of the next pass. Returns whether it wrapped.
  bool advance(uint32_t size, uint32_t n = 1) {
    if ((idx += n) != size) return false;
    idx = 0;
    polarity = !polarity;
    return true;
  }
};

}  // namespace irdma_sim::device
