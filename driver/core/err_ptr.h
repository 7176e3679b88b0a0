// A pointer or a negative errno, as Linux's ERR_PTR/IS_ERR/PTR_ERR carry them.
#pragma once

#include <cassert>

namespace ibcore {

template <typename T>
class ErrPtr {
 public:
  ErrPtr(T* ptr) : ptr_(ptr) { assert(ptr != nullptr); }  // NOLINT: implicit like a pointer
  static ErrPtr error(int negative_errno) { return ErrPtr(negative_errno); }

  bool is_err() const { return ptr_ == nullptr; }
  int err() const { return err_; }
  T* get() const { return ptr_; }
  T* operator->() const { return ptr_; }

 private:
  explicit ErrPtr(int e) : err_(e) { assert(e < 0); }
  T* ptr_ = nullptr;
  int err_ = 0;
};

}  // namespace ibcore
