#include "service/status_page.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <utility>

#include "ipc/protocol.h"

namespace udiag::service {

base::ErrorOr<StatusPage> StatusPage::Create(uint32_t first_id, uint32_t capacity) {
  StatusPage page;
  page.fd_.Reset(memfd_create("udiag-status", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!page.fd_) return base::Errno{errno};
  const size_t bytes = ipc::StatusMemfdBytes(capacity);
  if (ftruncate(page.fd_.get(), static_cast<off_t>(bytes)) < 0) return base::Errno{errno};
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, page.fd_.get(), 0);
  if (p == MAP_FAILED) return base::Errno{errno};
  page.bytes_ = static_cast<uint8_t*>(p);
  page.first_id_ = first_id;
  page.capacity_ = capacity;
  // Our writable mapping stays; nobody can make a new one or resize.
  if (fcntl(page.fd_.get(), F_ADD_SEALS,
            F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) < 0) {
    return base::Errno{errno};
  }
  return page;
}

StatusPage::StatusPage(StatusPage&& other) noexcept { *this = std::move(other); }

StatusPage& StatusPage::operator=(StatusPage&& other) noexcept {
  std::swap(fd_, other.fd_);
  std::swap(bytes_, other.bytes_);
  std::swap(first_id_, other.first_id_);
  std::swap(capacity_, other.capacity_);
  return *this;
}

StatusPage::~StatusPage() {
  if (bytes_) munmap(bytes_, ipc::StatusMemfdBytes(capacity_));
}

void StatusPage::Set(uint32_t id, uint8_t status) {
  if (!Contains(id)) return;
  std::atomic_ref<uint8_t>(bytes_[id - first_id_]).store(status, std::memory_order_release);
}

uint8_t StatusPage::Get(uint32_t id) const {
  if (!Contains(id)) return 0;
  return std::atomic_ref<uint8_t>(bytes_[id - first_id_]).load(std::memory_order_acquire);
}

void StatusPage::SetRingFullWaitMs(uint32_t ms) {
  auto* policy = reinterpret_cast<ipc::ProducerPolicy*>(bytes_ + ipc::ProducerPolicyOffset(capacity_));
  policy->ring_full_wait_ms.store(ms, std::memory_order_relaxed);
}

}  // namespace udiag::service
