// ftrace's `error_log`: the last few command errors of an instance, with the
// command and a caret (filters and hist triggers).
#pragma once

#include <deque>
#include <string>

namespace udiag::service {

class ErrorLog {
 public:
  // The kernel keeps this many per trace instance (TRACING_LOG_ERRS_MAX).
  static constexpr size_t kMaxEntries = 16;

  void Add(std::string entry) {
    if (entries_.size() == kMaxEntries) entries_.pop_front();
    entries_.push_back(std::move(entry));
  }
  std::string Text() const {
    std::string out;
    for (const std::string& e : entries_) out += e;
    return out;
  }
  void Clear() { entries_.clear(); }

 private:
  std::deque<std::string> entries_;
};

}  // namespace udiag::service
