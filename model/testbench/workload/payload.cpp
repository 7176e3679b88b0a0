#include "model/testbench/workload/payload.h"

#include <cstring>

namespace irdma_sim::testbench {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void fill_payload(uint8_t* dst, uint32_t len, uint64_t key) {
  uint32_t off = 0;
  for (; off + 8 <= len; off += 8) {
    const uint64_t word = splitmix64(key + off);
    std::memcpy(dst + off, &word, 8);
  }
  if (off < len) {
    const uint64_t word = splitmix64(key + off);
    std::memcpy(dst + off, &word, len - off);
  }
}

bool payload_equals(const uint8_t* buf, uint32_t len, uint64_t key) {
  uint64_t diff = 0;
  uint32_t off = 0;
  for (; off + 8 <= len; off += 8) {
    uint64_t word;
    std::memcpy(&word, buf + off, 8);
    diff |= word ^ splitmix64(key + off);
  }
  if (off < len) {
    uint64_t word = 0, want = splitmix64(key + off);
    std::memcpy(&word, buf + off, len - off);
    diff |= (word ^ want) & (~0ull >> (8 * (8 - (len - off))));
  }
  return diff == 0;
}

uint64_t payload_key(uint64_t seed, unsigned qp_index, uint64_t seq) {
  return splitmix64(seed * 31 + qp_index) ^ (seq << 20);
}

uint64_t read_source_key(uint64_t seed, unsigned owner, uint32_t slot) {
  return splitmix64(seed ^ 0x5EAD) + (uint64_t(owner) << 48) + (uint64_t(slot) << 24);
}

uint32_t message_size(const TrafficSpec& t, uint64_t seed, unsigned qp_index, uint64_t seq) {
  const uint64_t span = uint64_t(t.max_bytes) - t.min_bytes + 1;
  return t.min_bytes + uint32_t(splitmix64(seed ^ (uint64_t(qp_index) << 40) ^ seq) % span);
}

}  // namespace irdma_sim::testbench
