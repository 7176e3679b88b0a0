// A set of small integers (QP indexes) taken in ascending order from a starting point: a
// bit per member and a bit per non-empty word, so that neither an insertion nor finding
// the next member allocates or walks more than a few words per 4096 members.
#pragma once

#include <cstdint>
#include <vector>

namespace irdma_sim::testbench {

class ReadySet {
 public:
  static constexpr unsigned kNone = ~0u;

  explicit ReadySet(unsigned size = 0) { resize(size); }
  void resize(unsigned size) {
    words_.assign((size + 63) / 64, 0);
    summary_.assign((words_.size() + 63) / 64, 0);
  }
  void insert(unsigned i) {
    words_[i / 64] |= 1ull << (i % 64);
    summary_[i / 4096] |= 1ull << (i / 64 % 64);
  }
  // The smallest member at `from` or after, removed from the set; kNone when there is none.
  unsigned take_from(unsigned from) {
    size_t w = from / 64;
    if (w >= words_.size()) return kNone;
    uint64_t bits = words_[w] & (~0ull << (from % 64));
    if (!bits) {
      w = next_word(w + 1);
      if (w == words_.size()) return kNone;
      bits = words_[w];
    }
    const unsigned i = unsigned(w * 64 + unsigned(__builtin_ctzll(bits)));
    words_[w] &= ~(1ull << (i % 64));
    if (!words_[w]) summary_[w / 64] &= ~(1ull << (w % 64));
    return i;
  }

 private:
  // The first non-empty word at `w` or after, or words_.size().
  size_t next_word(size_t w) const {
    for (size_t s = w / 64; s < summary_.size(); ++s) {
      const uint64_t mask = s == w / 64 ? ~0ull << (w % 64) : ~0ull;
      if (const uint64_t bits = summary_[s] & mask) return s * 64 + size_t(__builtin_ctzll(bits));
    }
    return words_.size();
  }

  std::vector<uint64_t> words_;
  std::vector<uint64_t> summary_;
};

}  // namespace irdma_sim::testbench
