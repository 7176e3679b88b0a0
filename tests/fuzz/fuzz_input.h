// What the fuzz targets share: the fuzzer's bytes as a source of choices, and how a target
// reports a broken rule (to stderr, then abort: libFuzzer keeps the input as a crash).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace irdma_sim::fuzz {

// Draws 64-bit values from the input, 8 bytes at a time (fewer at its end); once the input
// is spent every draw is 0, so a short input still makes a whole, deterministic run.
class ByteEntropy {
 public:
  ByteEntropy(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint64_t operator()() {
    uint64_t v = 0;
    const size_t n = size_ < sizeof v ? size_ : sizeof v;
    if (n == 0) return 0;  // an empty input's data may be null, which memcpy may not be given
    std::memcpy(&v, data_, n);
    data_ += n;
    size_ -= n;
    return v;
  }

 private:
  const uint8_t* data_;
  size_t size_;
};

[[noreturn]] inline void broken(const char* target, const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", target, what.c_str());
  std::abort();
}

}  // namespace irdma_sim::fuzz
