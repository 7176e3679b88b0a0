// Numbers and bytes appended to text without allocations or printf: what the run's output
// writers (trace, completions, stimulus, JSON reports) format with.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>

namespace irdma_sim::trace {

inline constexpr char kHexDigits[] = "0123456789abcdef";

// `v` in decimal, or in another base without prefix (what std::to_string and "%llx" print).
template <typename T>
void append_number(std::string& out, T v, int base = 10) {
  char buf[8 * sizeof(T) + 1];  // base 2 of the widest T, and its sign
  out.append(buf, size_t(std::to_chars(buf, buf + sizeof buf, v, base).ptr - buf));
}

// Two lowercase hex digits per byte.
inline void append_hex(std::string& out, const void* bytes, size_t len) {
  const auto* p = static_cast<const uint8_t*>(bytes);
  for (size_t i = 0; i < len; i++) {
    out += kHexDigits[p[i] >> 4];
    out += kHexDigits[p[i] & 15];
  }
}

}  // namespace irdma_sim::trace
