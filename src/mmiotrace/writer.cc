#include "mmiotrace/writer.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "mmiotrace/session_wire.h"

namespace udiag::mmiotrace {
namespace {

constexpr long kDrainPeriodNs = 2'000'000;
constexpr size_t kStackBytes = 1 << 20;

}  // namespace

void Writer::Connect() {
  if (socket_ >= 0) close(socket_);
  socket_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  if (socket_ < 0 || socket_path_.size() >= sizeof(addr.sun_path)) return;
  std::memcpy(addr.sun_path, socket_path_.c_str(), socket_path_.size() + 1);
  if (connect(socket_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(socket_);
    socket_ = -1;
  }
}

// Each writer runs on a stack of its own making: glibc would give the thread
// a fork child starts the parent writer's cached stack, and with it the same
// pthread_t, which ThreadSanitizer takes for a duplicate thread. (A fork
// child's copy of the parent's stack is simply left alone.)
void Writer::StartThread() {
  stop_ = false;
  void* stack = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstack(&attr, stack, kStackBytes);
  sem_init(&thread_started_, 0, 0);
  running_ = pthread_create(&thread_, &attr, &Writer::ThreadMain, this) == 0;
  pthread_attr_destroy(&attr);
  if (running_) {
    rings_->SetDrainerRunning(true);
    stack_ = stack;
    // A thread still starting may hold its run time's locks (a sanitizer's
    // thread registry). A fork then would leave them locked in the child,
    // whose own writer thread would wait for them forever.
    while (sem_wait(&thread_started_) != 0) {
    }
  } else {
    munmap(stack, kStackBytes);
  }
  sem_destroy(&thread_started_);
}

void Writer::Start() {
  Connect();
  events_.Open();  // without a daemon the session has said that events go nowhere
  StartThread();
}

void Writer::Stop() {
  if (running_) {
    rings_->SetDrainerRunning(false);
    stop_ = true;
    pthread_join(thread_, nullptr);
    munmap(stack_, kStackBytes);
    running_ = false;
  }
  std::lock_guard lock(flush_mutex_);
  Flush();
}

void Writer::RestartInForkChild() {
  running_ = false;  // that thread (and its stack) belongs to the parent
  rings_->SetDrainerRunning(false);
  drained_.clear();
  Connect();
  StartThread();
}

void* Writer::ThreadMain(void* self) {
  auto* writer = static_cast<Writer*>(self);
  sem_post(&writer->thread_started_);
  const timespec period{0, kDrainPeriodNs};
  while (!writer->stop_.load()) {
    {
      std::lock_guard lock(writer->flush_mutex_);
      writer->Flush();
    }
    nanosleep(&period, nullptr);
  }
  return nullptr;
}

void Writer::Send(const void* data, size_t size) {
  if (socket_ >= 0) send(socket_, data, size, MSG_NOSIGNAL);
}

void Writer::Flush() {
  drained_.clear();
  uint64_t lost = rings_->Drain(&drained_);
  if (lost > 0) {
    WireHeader header{WireType::kLost, 0, lost};
    Send(&header, sizeof(header));
  }
  for (size_t first = 0; first < drained_.size(); first += kRecordsPerMessage) {
    uint32_t count = static_cast<uint32_t>(std::min<size_t>(kRecordsPerMessage, drained_.size() - first));
    WireHeader header{WireType::kRecords, count, 0};
    message_.resize(sizeof(header) + count * sizeof(Record));
    std::memcpy(message_.data(), &header, sizeof(header));
    std::memcpy(message_.data() + sizeof(header), &drained_[first], count * sizeof(Record));
    Send(message_.data(), message_.size());
  }
  events_.Emit(drained_);
}

}  // namespace udiag::mmiotrace
