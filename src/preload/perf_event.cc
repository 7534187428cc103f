#include "preload/perf_event.h"

#include <sched.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ipc/protocol.h"
#include "producer/client.h"
#include "producer/data_files.h"

namespace udiag::preload {

std::atomic<int> g_open_perf_events{0};

namespace {

constexpr uint64_t kSupportedSampleType = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
                                          PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |
                                          PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
                                          PERF_SAMPLE_RAW;
constexpr uint64_t kLostFormat = 1u << 4;  // PERF_FORMAT_LOST (6.0), absent from older headers
constexpr uint64_t kSupportedReadFormat = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING |
                                          PERF_FORMAT_ID | PERF_FORMAT_GROUP | kLostFormat;

struct PerfEvent {
  int fd = -1;  // an eventfd: readable once a wake-up is due, as perf's poll()
  uint32_t event_id = 0;
  perf_event_attr attr{};
  pid_t tid = -1;  // the thread watched, -1 for all of them
  int cpu = -1;    // the cpu watched, -1 for all
  uint64_t id = 0;
  bool enabled = false;
  uint64_t count = 0;
  uint64_t time_enabled = 0;  // ns, up to enabled_since
  uint64_t enabled_since = 0;
  uint64_t lost = 0;          // not yet reported by a PERF_RECORD_LOST
  uint64_t lost_total = 0;
  uint64_t since_wakeup = 0;  // samples, or bytes with attr.watermark
  bool paused = false;
  // The ring, once mapped.
  int memfd = -1;
  uint8_t* ring = nullptr;
  size_t ring_len = 0;
  bool overwrite = false;  // mapped read-only: the kernel's overwrite mode
};

std::mutex g_mu;
std::unordered_map<int, std::unique_ptr<PerfEvent>>* g_events;  // under g_mu
uint64_t g_next_id = 1;

PerfEvent* Find(int fd) {
  if (!g_events) return nullptr;
  auto it = g_events->find(fd);
  return it == g_events->end() ? nullptr : it->second.get();
}

uint64_t Now(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t MonotonicNs() { return Now(CLOCK_MONOTONIC); }

uint64_t TimeEnabled(const PerfEvent& e) {
  return e.time_enabled + (e.enabled ? MonotonicNs() - e.enabled_since : 0);
}

int Fail(int err) {
  errno = err;
  return -1;
}

int AttachOnDaemon(ipc::MsgType type, uint32_t event_id) {
  auto* client = producer::Client::Get();
  if (!client) return ENOENT;
  ipc::PerfAttachRequest req{event_id};
  ipc::Encoder body;
  req.Encode(body);
  producer::Reply reply;
  int err = client->Call(type, &body, {}, &reply);
  return err ? err : reply.error;
}

// Is `tid` a thread of this process?
bool OwnThread(pid_t tid) {
  std::string path = "/proc/self/task/" + std::to_string(tid);
  return access(path.c_str(), F_OK) == 0;
}

int CheckAttr(const perf_event_attr& attr, int group_fd, unsigned long flags) {
  if (attr.sample_type & ~kSupportedSampleType) return EINVAL;
  if (attr.read_format & ~kSupportedReadFormat) return EINVAL;
  if (group_fd != -1 || (flags & ~static_cast<unsigned long>(PERF_FLAG_FD_CLOEXEC | PERF_FLAG_FD_NO_GROUP))) {
    return EINVAL;
  }
  if (attr.inherit || attr.freq) return EINVAL;
  return 0;
}

// ---- The ring -----------------------------------------------------------

perf_event_mmap_page* Header(PerfEvent& e) { return reinterpret_cast<perf_event_mmap_page*>(e.ring); }

size_t DataSize(PerfEvent& e) { return e.ring ? e.ring_len - static_cast<size_t>(getpagesize()) : 0; }

// Room for `bytes` more at the head (always, in overwrite mode).
bool HasRoom(PerfEvent& e, size_t bytes) {
  perf_event_mmap_page* page = Header(e);
  if (e.overwrite) return bytes <= DataSize(e);
  uint64_t tail = __atomic_load_n(&page->data_tail, __ATOMIC_ACQUIRE);
  uint64_t head = page->data_head;
  return head - tail + bytes <= DataSize(e);
}

// Copies a record at the head, wrapping around, then publishes it.
void Put(PerfEvent& e, const std::vector<uint8_t>& record) {
  perf_event_mmap_page* page = Header(e);
  uint8_t* data = e.ring + page->data_offset;
  size_t size = DataSize(e);
  uint64_t head = page->data_head;
  size_t at = head & (size - 1);
  size_t first = std::min(record.size(), size - at);
  std::memcpy(data + at, record.data(), first);
  std::memcpy(data, record.data() + first, record.size() - first);
  __atomic_store_n(&page->data_head, head + record.size(), __ATOMIC_RELEASE);
}

template <typename T>
void Append(std::vector<uint8_t>& out, T value) {
  size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &value, sizeof(T));
}

void AppendHeader(std::vector<uint8_t>& out, uint32_t type, uint16_t misc) {
  Append<uint32_t>(out, type);
  Append<uint16_t>(out, misc);
  Append<uint16_t>(out, 0);  // size, set by SetSize
}

void SetSize(std::vector<uint8_t>& out) {
  uint16_t size = static_cast<uint16_t>(out.size());
  std::memcpy(out.data() + 6, &size, sizeof(size));
}

struct Writer {
  pid_t pid, tid;
  uint32_t cpu;
  uint64_t time;
};

// sample_id_all's trailer of non-sample records.
void AppendSampleId(std::vector<uint8_t>& out, const PerfEvent& e, const Writer& w) {
  uint64_t type = e.attr.sample_type;
  if (type & PERF_SAMPLE_TID) {
    Append<uint32_t>(out, w.pid);
    Append<uint32_t>(out, w.tid);
  }
  if (type & PERF_SAMPLE_TIME) Append<uint64_t>(out, w.time);
  if (type & PERF_SAMPLE_ID) Append<uint64_t>(out, e.id);
  if (type & PERF_SAMPLE_STREAM_ID) Append<uint64_t>(out, e.id);
  if (type & PERF_SAMPLE_CPU) {
    Append<uint32_t>(out, w.cpu);
    Append<uint32_t>(out, 0);
  }
  if (type & PERF_SAMPLE_IDENTIFIER) Append<uint64_t>(out, e.id);
}

std::vector<uint8_t> LostRecord(const PerfEvent& e, const Writer& w) {
  std::vector<uint8_t> out;
  AppendHeader(out, PERF_RECORD_LOST, 0);
  Append<uint64_t>(out, e.id);
  Append<uint64_t>(out, e.lost);
  if (e.attr.sample_id_all) AppendSampleId(out, e, w);
  SetSize(out);
  return out;
}

// PERF_RECORD_SAMPLE in the kernel's field order. The raw data is the trace
// record as ftrace has it (common fields, then the payload) with its u32
// size, zero-padded so that the sample stays 8-byte aligned.
std::vector<uint8_t> SampleRecord(const PerfEvent& e, const Writer& w, const uint8_t* payload, size_t len) {
  uint64_t type = e.attr.sample_type;
  std::vector<uint8_t> out;
  AppendHeader(out, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
  if (type & PERF_SAMPLE_IDENTIFIER) Append<uint64_t>(out, e.id);
  if (type & PERF_SAMPLE_IP) Append<uint64_t>(out, 0);
  if (type & PERF_SAMPLE_TID) {
    Append<uint32_t>(out, w.pid);
    Append<uint32_t>(out, w.tid);
  }
  if (type & PERF_SAMPLE_TIME) Append<uint64_t>(out, w.time);
  if (type & PERF_SAMPLE_ADDR) Append<uint64_t>(out, 0);
  if (type & PERF_SAMPLE_ID) Append<uint64_t>(out, e.id);
  if (type & PERF_SAMPLE_STREAM_ID) Append<uint64_t>(out, e.id);
  if (type & PERF_SAMPLE_CPU) {
    Append<uint32_t>(out, w.cpu);
    Append<uint32_t>(out, 0);
  }
  if (type & PERF_SAMPLE_PERIOD) Append<uint64_t>(out, e.attr.sample_period ? e.attr.sample_period : 1);
  if (type & PERF_SAMPLE_RAW) {
    size_t entry = 8 + len;  // u16 common_type, u8 flags, u8 preempt_count, s32 common_pid
    uint32_t raw_size = static_cast<uint32_t>(((entry + 4 + 7) & ~size_t{7}) - 4);
    Append<uint32_t>(out, raw_size);
    Append<uint16_t>(out, static_cast<uint16_t>(e.event_id));
    Append<uint8_t>(out, 0);
    Append<uint8_t>(out, 0);
    Append<int32_t>(out, w.tid);
    out.insert(out.end(), payload, payload + len);
    out.resize(out.size() + (raw_size - entry));
  }
  SetSize(out);
  return out;
}

void Wake(PerfEvent& e, size_t bytes) {
  e.since_wakeup += e.attr.watermark ? bytes : 1;
  uint64_t due = e.attr.watermark ? (e.attr.wakeup_watermark ? e.attr.wakeup_watermark : DataSize(e) / 2)
                                  : (e.attr.wakeup_events ? e.attr.wakeup_events : 1);
  if (e.since_wakeup < due) return;
  e.since_wakeup = 0;
  eventfd_write(e.fd, 1);
}

void Sample(PerfEvent& e, const Writer& w, const uint8_t* payload, size_t len) {
  ++e.count;
  uint64_t period = e.attr.sample_period ? e.attr.sample_period : 1;
  if (!e.ring || e.paused || e.count % period != 0 || DataSize(e) == 0) return;
  if (e.lost) {
    std::vector<uint8_t> lost = LostRecord(e, w);
    if (!HasRoom(e, lost.size())) {
      ++e.lost;
      ++e.lost_total;
      return;
    }
    Put(e, lost);
    e.lost = 0;
  }
  // The reader caught up since the last wake-up: poll() blocks again until
  // the next one is due (an eventfd cannot tell when the ring is read).
  if (!e.overwrite && Header(e)->data_tail == Header(e)->data_head) {
    eventfd_t stale;
    eventfd_read(e.fd, &stale);
  }
  std::vector<uint8_t> sample = SampleRecord(e, w, payload, len);
  if (!HasRoom(e, sample.size())) {
    ++e.lost;
    ++e.lost_total;
    return;
  }
  Put(e, sample);
  Wake(e, sample.size());
}

}  // namespace

bool PerfOpen(const perf_event_attr* attr, pid_t pid, int cpu, int group_fd, unsigned long flags, long* result) {
  if (!attr || attr->type != PERF_TYPE_TRACEPOINT) return false;
  if (attr->config < ipc::kFirstEventId || attr->config > ipc::kLastEventId) return false;
  // pid 0 is the caller; -1 every thread (on one cpu, as the kernel wants).
  pid_t tid = pid == 0 ? gettid() : pid;
  if (pid == -1 && cpu < 0) {
    *result = Fail(EINVAL);
    return true;
  }
  if (pid > 0 && !OwnThread(pid)) return false;  // another process: only the kernel could see it
  perf_event_attr copy{};
  std::memcpy(&copy, attr, std::min<size_t>(attr->size ? attr->size : PERF_ATTR_SIZE_VER0, sizeof(copy)));
  if (int err = CheckAttr(copy, group_fd, flags)) {
    *result = Fail(err);
    return true;
  }
  int saved = errno;
  int err = AttachOnDaemon(ipc::MsgType::kPerfAttach, static_cast<uint32_t>(copy.config));
  if (err == ENOENT || err == ENOTCONN || err == ECONNREFUSED) {
    errno = saved;
    return false;  // not an event of the daemon's
  }
  if (err) {
    *result = Fail(err);
    return true;
  }
  int fd = eventfd(0, EFD_NONBLOCK | ((flags & PERF_FLAG_FD_CLOEXEC) ? EFD_CLOEXEC : 0));
  if (fd < 0) {
    err = errno;
    AttachOnDaemon(ipc::MsgType::kPerfDetach, static_cast<uint32_t>(copy.config));
    *result = Fail(err);
    return true;
  }
  auto e = std::make_unique<PerfEvent>();
  e->fd = fd;
  e->event_id = static_cast<uint32_t>(copy.config);
  e->attr = copy;
  e->tid = pid == -1 ? -1 : tid;
  e->cpu = cpu;
  e->enabled = !copy.disabled && !copy.enable_on_exec;
  e->enabled_since = MonotonicNs();
  {
    std::lock_guard lock(g_mu);
    if (!g_events) g_events = new std::unordered_map<int, std::unique_ptr<PerfEvent>>;
    e->id = g_next_id++;
    (*g_events)[fd] = std::move(e);
  }
  g_open_perf_events.fetch_add(1, std::memory_order_relaxed);
  errno = saved;
  *result = fd;
  return true;
}

int PerfClose(int fd) {
  std::unique_ptr<PerfEvent> e;
  {
    std::lock_guard lock(g_mu);
    if (g_events) {
      auto it = g_events->find(fd);
      if (it != g_events->end()) {
        e = std::move(it->second);
        g_events->erase(it);
      }
    }
  }
  if (e) {
    g_open_perf_events.fetch_sub(1, std::memory_order_relaxed);
    int saved = errno;
    AttachOnDaemon(ipc::MsgType::kPerfDetach, e->event_id);
    if (e->ring) munmap(e->ring, e->ring_len);
    if (e->memfd >= 0) close(e->memfd);
    errno = saved;
  }
  return close(fd);
}

int PerfIoctl(int fd, unsigned long request, void* arg) {
  std::lock_guard lock(g_mu);
  PerfEvent* e = Find(fd);
  if (!e) return Fail(EBADF);
  switch (request) {
    case PERF_EVENT_IOC_ENABLE:
      if (!e->enabled) e->enabled_since = MonotonicNs();
      e->enabled = true;
      return 0;
    case PERF_EVENT_IOC_DISABLE:
      if (e->enabled) e->time_enabled += MonotonicNs() - e->enabled_since;
      e->enabled = false;
      return 0;
    case PERF_EVENT_IOC_RESET:
      e->count = 0;
      return 0;
    case PERF_EVENT_IOC_ID:
      if (!arg) return Fail(EFAULT);
      std::memcpy(arg, &e->id, sizeof(e->id));
      return 0;
    case PERF_EVENT_IOC_PERIOD: {
      if (!arg) return Fail(EFAULT);
      uint64_t period;
      std::memcpy(&period, arg, sizeof(period));
      if (period == 0) return Fail(EINVAL);
      e->attr.sample_period = period;
      return 0;
    }
    case PERF_EVENT_IOC_PAUSE_OUTPUT:
      e->paused = reinterpret_cast<uintptr_t>(arg) != 0;
      return 0;
    case PERF_EVENT_IOC_SET_OUTPUT:
      return reinterpret_cast<intptr_t>(arg) == -1 ? 0 : Fail(EINVAL);
    case PERF_EVENT_IOC_REFRESH:
    case PERF_EVENT_IOC_SET_FILTER:
    case PERF_EVENT_IOC_SET_BPF:
    case PERF_EVENT_IOC_QUERY_BPF:
    case PERF_EVENT_IOC_MODIFY_ATTRIBUTES:
      return Fail(EINVAL);
    default:
      return Fail(ENOTTY);
  }
}

ssize_t PerfRead(int fd, void* buf, size_t count) {
  std::lock_guard lock(g_mu);
  PerfEvent* e = Find(fd);
  if (!e) return Fail(EBADF);
  uint64_t format = e->attr.read_format;
  uint64_t enabled = TimeEnabled(*e);
  std::vector<uint64_t> values;
  if (format & PERF_FORMAT_GROUP) values.push_back(1);  // a group of one
  if (!(format & PERF_FORMAT_GROUP)) values.push_back(e->count);
  if (format & PERF_FORMAT_TOTAL_TIME_ENABLED) values.push_back(enabled);
  if (format & PERF_FORMAT_TOTAL_TIME_RUNNING) values.push_back(enabled);
  if (format & PERF_FORMAT_GROUP) values.push_back(e->count);
  if (format & PERF_FORMAT_ID) values.push_back(e->id);
  if (format & kLostFormat) values.push_back(e->lost_total);
  size_t bytes = values.size() * sizeof(uint64_t);
  if (count < bytes) return Fail(ENOSPC);
  std::memcpy(buf, values.data(), bytes);
  return static_cast<ssize_t>(bytes);
}

void* PerfMmap(void* addr, size_t len, int prot, int flags, int fd, off_t offset) {
  const size_t page = static_cast<size_t>(getpagesize());
  std::lock_guard lock(g_mu);
  PerfEvent* e = Find(fd);
  if (!e) {
    errno = EBADF;
    return MAP_FAILED;
  }
  size_t data_pages = len / page - 1;
  bool valid = offset == 0 && (flags & MAP_SHARED) && len % page == 0 && len >= page &&
               (data_pages & (data_pages - 1)) == 0;
  if (!valid || (e->ring && len != e->ring_len)) {
    errno = EINVAL;
    return MAP_FAILED;
  }
  if (!e->ring) {
    std::string name = "perf_event:" + std::to_string(e->event_id);
    int memfd = memfd_create(name.c_str(), MFD_CLOEXEC);
    if (memfd < 0) return MAP_FAILED;
    void* ring = MAP_FAILED;
    if (ftruncate(memfd, static_cast<off_t>(len)) == 0) {
      ring = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
    }
    if (ring == MAP_FAILED) {
      int err = errno;
      close(memfd);
      errno = err;
      return MAP_FAILED;
    }
    e->memfd = memfd;
    e->ring = static_cast<uint8_t*>(ring);
    e->ring_len = len;
    e->overwrite = !(prot & PROT_WRITE);
    perf_event_mmap_page* header = Header(*e);
    header->data_offset = page;
    header->data_size = len - page;
  }
  return mmap(addr, len, prot, flags, e->memfd, 0);
}

void PerfOnWrite(int fd, const iovec* iov, int iovcnt) {
  std::vector<uint8_t> bytes;
  for (int i = 0; i < iovcnt; ++i) {
    auto* base = static_cast<const uint8_t*>(iov[i].iov_base);
    bytes.insert(bytes.end(), base, base + iov[i].iov_len);
  }
  if (bytes.size() < sizeof(uint32_t)) return;
  uint32_t index;
  std::memcpy(&index, bytes.data(), sizeof(index));
  producer::DataFileMirror* file = producer::DataFiles().Find(fd);
  const producer::EventSlot* slot = file ? file->Find(index) : nullptr;
  if (!slot) return;
  int cpu = sched_getcpu();
  Writer w{getpid(), gettid(), static_cast<uint32_t>(cpu < 0 ? 0 : cpu), 0};
  std::lock_guard lock(g_mu);
  if (!g_events) return;
  for (auto& [_, e] : *g_events) {
    if (e->event_id != slot->id || !e->enabled) continue;
    if ((e->tid != -1 && e->tid != w.tid) || (e->cpu != -1 && e->cpu != cpu)) continue;
    w.time = Now(e->attr.use_clockid ? e->attr.clockid : CLOCK_MONOTONIC);
    Sample(*e, w, bytes.data() + sizeof(index), bytes.size() - sizeof(index));
  }
}

}  // namespace udiag::preload
