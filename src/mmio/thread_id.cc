#include "mmio/thread_id.h"

#include <pthread.h>
#include <unistd.h>

#include <mutex>

namespace udiag::mmio {
namespace {

__thread pid_t t_thread_id __attribute__((tls_model("initial-exec")));

}  // namespace

pid_t CurrentThreadId() {
  if (t_thread_id == 0) t_thread_id = gettid();
  return t_thread_id;
}

void ForgetThreadIdsAfterFork() {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(nullptr, nullptr, [] { t_thread_id = 0; }); });
}

}  // namespace udiag::mmio
