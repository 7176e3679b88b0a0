// A first-in first-out queue in one ring buffer that doubles when full. Nothing is
// allocated until the first push and nothing per element after: a run keeps several of
// these per QP (thousands of them, each mostly a few entries long), where a std::deque
// allocates a map and a block at construction and a block every few elements.
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>

namespace irdma_sim::testbench {

template <typename T>
class Fifo {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  // The i-th oldest element.
  T& operator[](size_t i) { return buf_[(head_ + i) & (capacity_ - 1)]; }
  const T& operator[](size_t i) const { return buf_[(head_ + i) & (capacity_ - 1)]; }
  T& front() { return (*this)[0]; }
  const T& front() const { return (*this)[0]; }
  void push_back(const T& value) {
    if (size_ == capacity_) grow();
    (*this)[size_++] = value;
  }
  // Drops the `n` oldest elements (at most size()).
  void pop_front(size_t n = 1) {
    head_ = (head_ + n) & (capacity_ - 1);
    size_ -= n;
  }
  void clear() { head_ = size_ = 0; }

 private:
  void grow() {
    const size_t capacity = capacity_ ? 2 * capacity_ : 4;
    std::unique_ptr<T[]> buf(new T[capacity]);
    for (size_t i = 0; i < size_; ++i) buf[i] = (*this)[i];
    buf_ = std::move(buf);
    head_ = 0;
    capacity_ = capacity;
  }

  std::unique_ptr<T[]> buf_;
  size_t head_ = 0, size_ = 0, capacity_ = 0;  // capacity_: 0 or a power of two
};

}  // namespace irdma_sim::testbench
