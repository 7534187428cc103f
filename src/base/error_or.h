// ErrorOr<T>: a value or a positive errno, the currency of every fallible call
// in udiag (the kernel ABI speaks errno, so the internals do too).
#pragma once

#include <cassert>
#include <optional>
#include <utility>

namespace udiag::base {

struct Errno {
  int value;
};

template <typename T>
class [[nodiscard]] ErrorOr {
 public:
  ErrorOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  ErrorOr(Errno err) : error_(err.value) { assert(err.value > 0); }

  bool ok() const { return error_ == 0; }
  int error() const { return error_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const T& value() const& { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }

 private:
  std::optional<T> value_;
  int error_ = 0;
};

}  // namespace udiag::base
