// The background writer of a traced process: every few milliseconds it
// drains the thread rings, sends the records (and the count of dropped ones)
// to the session, and writes the enabled mmiotrace_* events to udiagd.
#pragma once

#include <pthread.h>
#include <semaphore.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "mmiotrace/record.h"
#include "mmiotrace/thread_rings.h"
#include "mmiotrace/trace_events.h"

namespace udiag::mmiotrace {

class Writer {
 public:
  Writer(ThreadRings* rings, std::string socket_path) : rings_(rings), socket_path_(std::move(socket_path)) {}

  // Connects to the session, opens the event set and starts the thread.
  void Start();
  // Stops the thread and sends what is still queued (at exit).
  void Stop();
  // fork() support. The thread must not be inside a flush when the process
  // forks: it may hold an allocator lock then, which the child would
  // inherit locked (glibc's malloc copes; sanitizer allocators do not).
  void PauseForFork() { flush_mutex_.lock(); }
  void ResumeAfterFork() { flush_mutex_.unlock(); }
  // In a fork child, after ResumeAfterFork: the parent's thread and
  // connection are not ours; a new connection tells the session about us.
  void RestartInForkChild();

 private:
  static void* ThreadMain(void* self);
  void Connect();
  void StartThread();
  void Flush();  // with flush_mutex_ held
  void Send(const void* data, size_t size);

  ThreadRings* rings_;
  std::string socket_path_;
  int socket_ = -1;
  TraceEvents events_;
  pthread_t thread_{};
  sem_t thread_started_;  // posted by the thread as it starts its loop
  void* stack_ = nullptr;
  bool running_ = false;
  std::atomic<bool> stop_{false};
  std::mutex flush_mutex_;
  std::vector<Record> drained_;
  std::vector<uint8_t> message_;
};

}  // namespace udiag::mmiotrace
