// The order in which a device in another process reads and writes shared host memory
// (coherent_dma): every interleaving of a host CPU writing a descriptor with the device
// reading it, enumerated, and the descriptor layouts the irdma rings use.
#include "driver/backends/coherent_dma.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace {

using namespace pcie::coherent_dma;

std::vector<size_t> read_order(uint64_t addr, size_t size) {
  std::vector<size_t> order;
  in_read_order(addr, size, [&](size_t q) { order.push_back(q / 8); });
  return order;
}

std::vector<size_t> write_order(uint64_t addr, size_t size) {
  std::vector<size_t> order;
  in_write_order(addr, size, [&](size_t q) { order.push_back(q / 8); });
  return order;
}

std::vector<size_t> ascending(size_t qwords) {  // what a memcpy may do
  std::vector<size_t> order(qwords);
  for (size_t i = 0; i < qwords; i++) order[i] = i;
  return order;
}

// A 4-qword descriptor rewritten by the host (body, then its valid qword, as the driver
// writes a WQE) while the device reads it in `device_order`: every interleaving of the two
// programs, counting those where the device takes the new valid bit with a stale body.
int torn_reads(const std::vector<size_t>& device_order) {
  constexpr size_t kQwords = 4, kValid = 3;
  const std::array<size_t, kQwords> host_order{0, 1, 2, kValid};
  int torn = 0;
  // An interleaving: which of the 8 steps are the host's (a 4-of-8 choice).
  for (unsigned host_steps = 0; host_steps < 256; host_steps++) {
    if (__builtin_popcount(host_steps) != kQwords) continue;
    std::array<bool, kQwords> written{}, seen_new{};
    size_t h = 0, d = 0;
    for (unsigned step = 0; step < 2 * kQwords; step++) {
      if (host_steps & (1u << step))
        written[host_order[h++]] = true;
      else
        seen_new[device_order[d]] = written[device_order[d]], d++;
    }
    bool stale_body = false;
    for (size_t q = 0; q < kQwords; q++) stale_body |= q != kValid && !seen_new[q];
    torn += seen_new[kValid] && stale_body;
  }
  return torn;
}

TEST(CoherentDma, NoInterleavingGivesANewValidBitWithAStaleBody) {
  EXPECT_GT(torn_reads(ascending(4)), 0);  // the check can fail: a memcpy's order tears
  EXPECT_EQ(torn_reads(read_order(0x1000, 32)), 0);
}

// In the device's read order, a descriptor's valid qword comes before each of its body
// qwords; in its write order, after each.
void expect_valid_first(const std::vector<size_t>& order, size_t first, size_t qwords, bool read) {
  const size_t valid = first + kValidQwordOffset / 8;
  auto pos = [&](size_t q) { return std::find(order.begin(), order.end(), q) - order.begin(); };
  for (size_t q = first; q < first + qwords; q++) {
    if (q == valid) continue;
    if (read)
      EXPECT_LT(pos(valid), pos(q)) << "descriptor at qword " << first << ", body qword " << q;
    else
      EXPECT_GT(pos(valid), pos(q)) << "descriptor at qword " << first << ", body qword " << q;
  }
}

TEST(CoherentDma, EveryDescriptorInAWindowIsReadHeaderFirst) {
  // An SQ window of up to 8 quanta holding WQEs of 1 to 8 quanta anywhere in it; a 64-byte
  // CQP WQE; a 32-byte RQ WQE.
  constexpr size_t kWindowQuanta = 8;
  for (size_t quanta = 1; quanta <= kWindowQuanta; quanta++)
    for (size_t at = 0; at + quanta <= kWindowQuanta; at++)
      expect_valid_first(read_order(0x40000, kWindowQuanta * kBlockBytes), at * 4, quanta * 4, true);
  expect_valid_first(read_order(0x2000, 64), 0, 8, true);
  expect_valid_first(read_order(0x2020, 32), 0, 4, true);
}

TEST(CoherentDma, EveryCompletionIsWrittenValidLast) {
  // A CQE or AEQE (32 bytes), each half of a 64-byte CQE, the CQ ring's blocks in one write.
  expect_valid_first(write_order(0x3000, 32), 0, 4, false);
  expect_valid_first(write_order(0x3000, 64), 0, 4, false);
  expect_valid_first(write_order(0x3000, 64), 4, 4, false);
}

TEST(CoherentDma, EachQwordOnceWhereverTheAccessStartsAndEnds) {
  // Shadow areas and arm qwords are single qwords anywhere in a block; an access may start
  // or end inside a block.
  for (uint64_t start = 0; start < 64; start += 8)
    for (size_t size = 8; size <= 96; size += 8) {
      for (const auto& order : {read_order(0x5000 + start, size), write_order(0x5000 + start, size)}) {
        std::vector<size_t> sorted(order);
        std::sort(sorted.begin(), sorted.end());
        EXPECT_EQ(sorted, ascending(size / 8)) << "start " << start << " size " << size;
      }
    }
}

TEST(CoherentDma, CopiesTheBytesAlignedOrNot) {
  alignas(64) std::array<uint8_t, 128> host{}, out{};
  for (size_t i = 0; i < host.size(); i++) host[i] = uint8_t(i * 7 + 1);
  device_read(host.data() + 8, out.data(), 72);
  EXPECT_TRUE(std::equal(out.begin(), out.begin() + 72, host.begin() + 8));
  device_read(host.data() + 3, out.data(), 13);  // a payload's odd bytes
  EXPECT_TRUE(std::equal(out.begin(), out.begin() + 13, host.begin() + 3));

  std::array<uint8_t, 128> in{};
  for (size_t i = 0; i < in.size(); i++) in[i] = uint8_t(200 - i);
  device_write(host.data() + 16, in.data(), 48);
  EXPECT_TRUE(std::equal(in.begin(), in.begin() + 48, host.begin() + 16));
  device_write(host.data() + 5, in.data(), 7);
  EXPECT_TRUE(std::equal(in.begin(), in.begin() + 7, host.begin() + 5));
}

}  // namespace
