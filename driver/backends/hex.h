// "0x..." for addresses and register values in the backends' one-line messages.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace backends {

inline std::string hex(uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(v));
  return text;
}

}  // namespace backends
