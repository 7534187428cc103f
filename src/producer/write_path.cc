// udiag_write/udiag_writev: the enabled fast path. The checks and their order
// are the kernel's (spec §9.2); the record goes into this thread's ring with
// no system call. Everything the daemon relies on it checks again.
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "base/short_copy.h"
#include "base/tsc.h"
#include "producer/client.h"
#include "producer/data_files.h"
#include "producer/thread_ring.h"
#include "udiag/udiag.h"

namespace udiag::producer {
namespace {

[[gnu::cold, gnu::noinline]] ssize_t Fail(int err) {
  errno = err;
  return -1;
}

// A write to an event nobody traces, or to a file of a daemon that went
// away: EBADF, as the kernel's write to a disabled event. While there is no
// daemon the write is counted lost (reported to the next one: thread_ring.h).
[[gnu::cold, gnu::noinline]] ssize_t Refuse() {
  if (!g_fast.connected.load(std::memory_order_relaxed)) {
    g_lost_while_disconnected.fetch_add(1, std::memory_order_relaxed);
  }
  return Fail(EBADF);
}

// Asks the daemon what `index` on `fd` is: for a descriptor this process
// did not open itself (inherited across exec, dup'ed) or an index another
// process registered on a shared data file.
[[gnu::cold, gnu::noinline]] const EventSlot* DescribeIndex(int fd, uint32_t index) {
  Client* client = Client::Get();
  if (!client) return nullptr;
  ipc::Encoder body;
  ipc::DescribeIndexRequest{index}.Encode(body);
  Reply reply;
  int fds[] = {fd};
  if (client->Call(ipc::MsgType::kDescribeIndex, &body, fds, &reply) || reply.error) {
    errno = reply.error ? reply.error : ENOTCONN;
    return nullptr;
  }
  ipc::EventInfo info;
  ipc::Decoder d(reply.body);
  if (!info.Decode(d)) return nullptr;
  std::lock_guard lock(DataFiles().mutex());
  DataFileMirror* mirror = DataFiles().FindOrAdd(fd, g_fast.epoch.load());
  mirror->Set(index, EventSlot{info.id, info.min_size, info.locs});
  return mirror->Find(index);
}

// Copies `len` bytes starting at byte `skip` of the iovecs into `dst`.
[[gnu::noinline]] void Gather(uint8_t* dst, const iovec* iov, int cnt, size_t skip, size_t len) {
  for (int i = 0; i < cnt && len; ++i) {
    size_t n = iov[i].iov_len;
    if (skip >= n) {
      skip -= n;
      continue;
    }
    size_t take = std::min(n - skip, len);
    std::memcpy(dst, static_cast<const uint8_t*>(iov[i].iov_base) + skip, take);
    dst += take;
    len -= take;
    skip = 0;
  }
}

// Pokes the daemon, then returns `written`: a write path ends in a tail
// call here.
[[gnu::cold, gnu::noinline]] ssize_t WakeAndReturn(ssize_t written) {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(g_fast.wake_fd.load(std::memory_order_relaxed), &one, sizeof(one));
  return written;
}

// The total length of the iovecs, or -1 with errno set as writev sets it.
[[gnu::noinline]] ssize_t TotalLength(const iovec* iov, int cnt) {
  if (cnt < 0 || cnt > IOV_MAX) return Fail(EINVAL);
  size_t total = 0;
  for (int i = 0; i < cnt; ++i) {
    if (iov[i].iov_len > SSIZE_MAX - total) return Fail(EINVAL);
    total += iov[i].iov_len;
  }
  return static_cast<ssize_t>(total);
}

// Reserves `payload` bytes for an event in the thread's ring, opening a
// page there, or in a larger ring when this one is full (the thread outran
// the daemon). nullptr when the event is dropped, counted lost: a full ring
// that cannot grow, a record too big for the trace, or a ring the daemon
// refused after the thread began writing into it; the write still
// succeeds, as in the kernel.
[[gnu::noinline]] uint8_t* ReserveGrowing(size_t payload, uint32_t id, uint32_t cpu, uint64_t ts) {
  if (t_ring.held_count != 0 && SettleHeldRings()) [[unlikely]] {
    g_lost_while_disconnected.fetch_add(1, std::memory_order_relaxed);  // this write too
    return nullptr;
  }
  ring::RingWriter& ring = ThreadWriter();  // GrowThreadRing keeps it, attached to the new ring
  const auto len = static_cast<uint32_t>(std::min<size_t>(payload, UINT32_MAX));
  uint8_t* dst = ring.ReserveUnlessFull(len, static_cast<uint16_t>(id), static_cast<uint16_t>(cpu), ts);
  if (dst) [[likely]]
    return dst;
  if (!ring.TakeOverflow()) return nullptr;  // too large, counted lost
  if (GrowThreadRing())
    dst = ring.ReserveUnlessFull(len, static_cast<uint16_t>(id), static_cast<uint16_t>(cpu), ts);
  if (!dst) ring.CountLost();
  return dst;
}

// Publishes the event reserved at `dst` and returns `written`, unless a loc
// word of its payload is invalid: then drops it, EFAULT. The words are
// checked in the ring's copy, so the caller cannot change them between
// check and use; they count from the common header, which the ring holds
// just before the payload (the daemon checks again).
[[gnu::always_inline]] inline ssize_t CommitIfLocsValid(ring::RingWriter& ring, const schema::LocCheck* locs,
                                                        uint32_t loc_count, const uint8_t* dst,
                                                        size_t payload_len, ssize_t written) {
  if (loc_count != 0 &&
      !schema::LocsValid(locs, loc_count, dst - 8, static_cast<uint32_t>(8 + payload_len))) {
    ring.Abandon();
    return Fail(EFAULT);
  }
  return ring.Commit() ? WakeAndReturn(written) : written;
}

// Every write the fast path below does not take: all of the kernel's
// checks, and the lookups of what (fd, index) is.
[[gnu::noinline]] ssize_t WriteEvent(int fd, const iovec* iov, int cnt) {
  // The usual shapes, [index][payload] and [index+payload], are sized
  // without a loop.
  const bool index_apart = cnt == 2 && iov[0].iov_len == sizeof(int32_t) && iov[1].iov_len <= SSIZE_MAX - sizeof(int32_t);
  const ssize_t length = index_apart ? static_cast<ssize_t>(sizeof(int32_t) + iov[1].iov_len)
                         : cnt == 1 && iov[0].iov_len <= SSIZE_MAX ? static_cast<ssize_t>(iov[0].iov_len)
                                                                   : TotalLength(iov, cnt);
  if (length < 0) return -1;
  const auto total = static_cast<size_t>(length);
  if (total < sizeof(int32_t)) return Fail(EFAULT);
  int32_t index;
  if (iov[0].iov_len >= sizeof(index)) {
    std::memcpy(&index, iov[0].iov_base, sizeof(index));
  } else {
    Gather(reinterpret_cast<uint8_t*>(&index), iov, cnt, 0, sizeof(index));
  }
  if (index < 0) return Fail(EINVAL);

  // The file's epoch first: slots of a file from a daemon that went away
  // hold that daemon's ids. The table's generation before the lookup, so a
  // file closed meanwhile is not remembered as current.
  const uint64_t files_generation = DataFiles().generation();
  DataFileMirror* file = DataFiles().Find(fd);
  if (file && file->epoch() != g_fast.epoch.load(std::memory_order_acquire)) return Refuse();
  const EventSlot* slot = file ? file->Find(index) : nullptr;
  if (!slot) {
    // After a restart the daemon's indices of the file are not the program's.
    if (file && !file->daemon_knows_indices()) return Fail(ENOENT);
    if (!(slot = DescribeIndex(fd, index))) return errno == ENOTCONN ? Refuse() : Fail(errno);
  }

  size_t payload = total - sizeof(index);
  if (payload < slot->min_size) return Fail(EINVAL);
  const uint32_t slot_index = slot->id - g_fast.first_event_id.load(std::memory_order_relaxed);
  if (slot_index >= g_fast.status_page_bytes.load(std::memory_order_relaxed)) return Refuse();
  const uint8_t* status = g_fast.status_page.load(std::memory_order_relaxed) + slot_index;
  if (!*status) return Refuse();

  ring::RingWriter* ring = CurrentThreadRing();
  if (!ring) return g_fast.connected.load(std::memory_order_relaxed) ? Fail(ENOMEM) : Refuse();
  uint32_t cpu;
  uint64_t ts;
  if (g_fast.clock.load(std::memory_order_relaxed) == static_cast<uint32_t>(ring::ClockDomain::kTsc)) {
    ts = base::ReadTsc(&cpu);
    t_ring.last_event = {.files_generation = files_generation,
                         .status = status,
                         .fd = fd,
                         .index = index,
                         .id = slot->id,
                         .min_size = slot->min_size,
                         .locs = slot->locs.data(),
                         .loc_count = static_cast<uint32_t>(slot->locs.size())};
    RememberedSlot(fd, index) = t_ring.last_event;
  } else {
    ts = base::MonotonicNs();
    cpu = base::CurrentCpu();
  }
  uint8_t* dst = ReserveGrowing(payload, slot->id, cpu, ts);
  if (!dst) return total;
  // The usual shapes, [index][payload] and [index+payload], copy directly,
  // in a few fixed-size moves for the usual short payloads.
  if (index_apart) {
    base::CopyShort(dst, static_cast<const uint8_t*>(iov[1].iov_base), payload);
  } else if (cnt == 1) {
    base::CopyShort(dst, static_cast<const uint8_t*>(iov[0].iov_base) + sizeof(index), payload);
  } else {
    Gather(dst, iov, cnt, sizeof(index), payload);
  }
  return CommitIfLocsValid(*ring, slot->locs.data(), static_cast<uint32_t>(slot->locs.size()), dst, payload,
                           length);
}

// Whether a write of `payload_len` bytes to `index` on `fd` is of the event
// `remembered`, with nothing it was checked against changed since
// (RememberedEvent).
[[gnu::always_inline]] inline bool IsRemembered(const RememberedEvent& remembered, int fd, int32_t index,
                                                size_t payload_len) {
  return index == remembered.index && fd == remembered.fd &&
         remembered.files_generation == DataFiles().generation() &&
         t_ring.generation == g_fast.ring_generation.load(std::memory_order_relaxed) &&
         payload_len >= remembered.min_size && payload_len <= ring::kMaxPayload && *remembered.status;
}

// Writes a remembered event, into the open page of the thread's ring when
// it fits there: `fill(dst)` puts the payload_len bytes at dst, and its
// loc words are then checked in the ring's copy, as WriteEvent does.
template <bool kMayHaveLocs = true, typename Fill>
[[gnu::always_inline]] inline ssize_t PutRemembered(const RememberedEvent& event, size_t payload_len,
                                                    Fill&& fill) {
  uint32_t cpu;
  const uint64_t ts = base::ReadTsc(&cpu);
  const auto written = static_cast<ssize_t>(payload_len + sizeof(int32_t));
  ring::RingWriter& writer = ThreadWriter();
  uint8_t* dst = writer.ReserveInOpenPage(static_cast<uint32_t>(payload_len), static_cast<uint16_t>(event.id),
                                          static_cast<uint16_t>(cpu), ts);
  if (!dst) [[unlikely]] {
    if (!(dst = ReserveGrowing(payload_len, event.id, cpu, ts))) return written;
  }
  fill(dst);
  return CommitIfLocsValid(writer, event.locs, kMayHaveLocs ? event.loc_count : 0, dst, payload_len, written);
}

// A remembered event in any shape but the usual two (a C++ event with
// strings is its fixed part, then each string and its NUL), with loc
// words, or not the thread's last event but in its slot.
// Gathered straight into the ring; more than kMaxGathered iovecs, or an
// index split across them, go to WriteEvent.
[[gnu::noinline]] ssize_t WriteRememberedGathered(int fd, const iovec* iov, int cnt) {
  constexpr int kMaxGathered = 16;
  if (cnt < 1 || cnt > kMaxGathered) return WriteEvent(fd, iov, cnt);
  // Each length read once, as writev does: another thread of the program
  // changing them meanwhile cannot make the copy outgrow the reservation.
  size_t lengths[kMaxGathered];
  size_t total = 0;
  for (int i = 0; i < cnt; ++i) {
    lengths[i] = iov[i].iov_len;
    // Too large for a record anyway, and no sum of such lengths overflows.
    if (lengths[i] > ring::kMaxPayload + sizeof(int32_t)) return WriteEvent(fd, iov, cnt);
    total += lengths[i];
  }
  if (lengths[0] < sizeof(int32_t)) return WriteEvent(fd, iov, cnt);
  int32_t index;
  std::memcpy(&index, iov[0].iov_base, sizeof(index));
  const size_t payload_len = total - sizeof(index);
  const RememberedEvent* remembered = &t_ring.last_event;
  if (!IsRemembered(*remembered, fd, index, payload_len)) {
    remembered = &RememberedSlot(fd, index);
    if (!IsRemembered(*remembered, fd, index, payload_len)) return WriteEvent(fd, iov, cnt);
  }
  // Not Gather: with the index whole in the first iovec there is nothing to
  // skip, and the pieces' moves inline (Gather's call and loop cost a string
  // event about 2.5 ns).
  return PutRemembered(*remembered, payload_len, [&](uint8_t* dst) {
    base::CopyShort(dst, static_cast<const uint8_t*>(iov[0].iov_base) + sizeof(index),
                    lengths[0] - sizeof(index));
    dst += lengths[0] - sizeof(index);
    for (int i = 1; i < cnt; ++i) {
      base::CopyShort(dst, static_cast<const uint8_t*>(iov[i].iov_base), lengths[i]);
      dst += lengths[i];
    }
  });
}

// The common write: an event this thread remembers (it wrote it before), in
// one of the usual shapes, [index][payload] or [index+payload]. Whatever
// else the kernel checks was checked when the event was remembered and
// cannot have changed since (RememberedEvent); anything this does not cover
// goes to WriteEvent.
ssize_t WriteRememberedEvent(int fd, const iovec* iov, int cnt) {
  const uint8_t* payload;
  size_t payload_len;
  if (cnt == 2 && iov[0].iov_len == sizeof(int32_t)) {
    payload = static_cast<const uint8_t*>(iov[1].iov_base);
    payload_len = iov[1].iov_len;
  } else if (cnt == 1 && iov[0].iov_len >= sizeof(int32_t)) {
    payload = static_cast<const uint8_t*>(iov[0].iov_base) + sizeof(int32_t);
    payload_len = iov[0].iov_len - sizeof(int32_t);
  } else {
    return WriteRememberedGathered(fd, iov, cnt);
  }
  int32_t index;
  std::memcpy(&index, iov[0].iov_base, sizeof(index));
  const RememberedEvent& remembered = t_ring.last_event;
  // Another event, maybe remembered in its slot, or one with loc words: the
  // gathered way looks there and checks them.
  if (!IsRemembered(remembered, fd, index, payload_len) || remembered.loc_count != 0) {
    return WriteRememberedGathered(fd, iov, cnt);
  }
  return PutRemembered<false>(remembered, payload_len,
                              [&](uint8_t* dst) { base::CopyShort(dst, payload, payload_len); });
}

}  // namespace
}  // namespace udiag::producer

extern "C" ssize_t udiag_writev(int fd, const struct iovec* iov, int iovcnt) {
  return udiag::producer::WriteRememberedEvent(fd, iov, iovcnt);
}

extern "C" ssize_t udiag_write(int fd, const void* buf, size_t count) {
  iovec iov{const_cast<void*>(buf), count};
  return udiag::producer::WriteRememberedEvent(fd, &iov, 1);
}
