// The page of event status bytes every producer maps read-only: byte i is
// the status of event id (first_id + i). The write path tests it to return
// EBADF for an event nobody traces without asking the daemon. After the
// bytes, the ipc::ProducerPolicy words. Sealed so that producers can never
// map it writable.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/error_or.h"
#include "base/scoped_fd.h"

namespace udiag::service {

class StatusPage {
 public:
  static base::ErrorOr<StatusPage> Create(uint32_t first_id, uint32_t capacity);
  StatusPage(StatusPage&&) noexcept;
  StatusPage& operator=(StatusPage&&) noexcept;
  ~StatusPage();

  uint32_t first_id() const { return first_id_; }
  uint32_t capacity() const { return capacity_; }
  bool Contains(uint32_t id) const { return id >= first_id_ && id - first_id_ < capacity_; }
  void Set(uint32_t id, uint8_t status);
  uint8_t Get(uint32_t id) const;
  int fd() const { return fd_.get(); }
  // What a new ring waits for room before the daemon has mapped it.
  void SetRingFullWaitMs(uint32_t ms);

 private:
  StatusPage() = default;
  base::ScopedFd fd_;
  uint8_t* bytes_ = nullptr;  // mapped: ipc::StatusMemfdBytes(capacity_)
  uint32_t first_id_ = 0;
  uint32_t capacity_ = 0;
};

}  // namespace udiag::service
