// Draining producer rings: checking each record again, merging the rings
// in time order, and holding back for instances that must not lose events.
#include "service/server.h"

#include <algorithm>
#include <cstring>

#include "base/tsc.h"
#include "schema/event_description.h"
#include "record/tracedat/page_decoder.h"
#include "service/page_check.h"
#include "service/page_overlap.h"
#include "service/page_run.h"
#include "service/run_merge.h"

namespace udiag::service {
namespace {

// Drain rounds: records per ring, records staged in all rings, rounds per
// loop turn. Threads are put in time order only within a round, so a round
// should take in every busy ring: 16 of them at kRoundRecords (3 MiB of
// staged records).
constexpr size_t kRoundRecords = 4096;
constexpr size_t kRoundStagedRecords = 65536;
constexpr int kMaxRounds = 64;
// How many rounds in a row a round's time limit (RoundTimeLimit) may leave
// records in a ring: a ring stamped in the past (a hostile producer's)
// holds the others back no longer. An honest backlog, a full ring of the
// largest size (ring_layout.h kMaxDataSize), catches up with the others in
// 1024 rounds at most (16 pages a round, counted as records are).
constexpr uint32_t kMaxHeldBackRounds = 4096;
// Records a page holds at most (the smallest events, 12 bytes with no
// payload, 16 with the shortest): a page's worth of a round's share of
// records, counted low, so that a round's time limit comes before the
// share ends.
constexpr size_t kMostRecordsPerPage = ring::kPageDataBytes / 16;
// A pass also ends after this long, so that requests (an enable write and
// the producers' acks it waits for) are answered while producers flood the
// rings; a slow build (sanitizers) or a starved daemon takes far longer per
// round than kMaxRounds assumes.
constexpr uint64_t kMaxPassNs = 20'000'000;
// The largest record a ring can hand over, with its common header: what a
// holding-back instance must have room for, per record drained.
constexpr size_t kMaxRecordBytes = schema::kCommonHeaderSize + ring::kMaxPayload;
// Whole pages a round stages at most (each counts as RingReader::kPageWeight
// records): the size of the arena their checked copies go in.
constexpr size_t kMaxStagedPages = kRoundStagedRecords / ring::RingReader::kPageWeight;
// How long a recording leaves the events of a page its producer is still
// filling in the ring, so as to take the page whole once it is closed;
// after that they are taken one by one. As long as a record stream keeps
// a page it is filling (RecordStreamSender::kPageFlushNs).
constexpr uint64_t kOpenPageHoldNs = 100'000'000;
// While several rings are drained, a page whose events span longer than
// this is taken event by event: a thread that slow shares its cpu with
// others within a page (it sleeps, or is preempted), and whole pages of two
// threads on one cpu that overlap in time would show time going back within
// the cpu. Threads fast enough to cost the daemon much fill a page in a few
// µs. A lone ring's pages overlap nobody's: they go whole however long
// they span.
constexpr uint64_t kMaxWholePageSpanNs = 50'000;

// Builds a record at `record`: the common header the kernel puts in front
// of a user event's payload, then the payload, copied out of the ring.
// Whether its `__data_loc` words point inside it: checked in this private
// copy, which the producer cannot change any more.
bool BuildRecord(uint8_t* record, const Event& event, uint32_t pid, const ring::PayloadSource& payload) {
  const uint16_t type = static_cast<uint16_t>(event.id);
  std::memcpy(record, &type, 2);
  record[2] = 0;  // flags
  record[3] = 0;  // preempt count
  std::memcpy(record + 4, &pid, 4);
  payload.CopyTo(record + schema::kCommonHeaderSize);
  return schema::LocsValid(event.locs.data(), event.locs.size(), record,
                           schema::kCommonHeaderSize + payload.size());
}

}  // namespace

void Server::SetRingsSleeping(bool sleeping) {
  for (auto& r : rings_) r.reader->SetConsumerSleeping(sleeping);
}

bool Server::SetRingsDozing(bool dozing) {
  bool all = true;
  for (auto& r : rings_) all &= r.reader->SetConsumerDozing(dozing);
  return all;
}

// Drains every ring in rounds of at most kRoundRecords records per ring. Each
// round publishes the rings' tails, so a fast producer gets its space back
// while we work, and bounds the memory a round holds; the rounds of one pass
// stop when the rings are empty, kMaxRounds were done or kMaxPassNs passed.
Server::DrainTotals Server::DrainRings(bool flush_open_pages) {
  DrainTotals total;
  const uint64_t pass_end = base::MonotonicNs() + kMaxPassNs;
  page_keeper_ = instances_->PerCpuPageKeeper();
  flush_open_pages_ = flush_open_pages;
  if (page_keeper_ && !page_arena_)
    page_arena_ = std::make_unique_for_overwrite<uint8_t[]>(kMaxStagedPages * ring::kRingPageSize);
  // A single ring has no runs to merge with: its records go to the instances
  // as they are drained.
  const bool deliver_now = rings_.size() == 1;
  for (int round = 0; round < kMaxRounds; ++round) {
    if (OnlyConsumerIsAFullRecorder()) break;
    drained_.clear();
    runs_.clear();
    staged_pages_.clear();
    // Each round: the last one's readers may have freed room, or gone.
    UpdateHoldBack();
    bool more = false;
    size_t delivered_now = 0;
    // Each round starts at the next ring, and a holding-back instance's room
    // is shared out between the rings: otherwise the first rings would take
    // all of it and the last ones' writers would wait in vain.
    const size_t ring_count = rings_.size();
    const size_t first = ring_count ? first_ring_++ % ring_count : 0;
    const size_t share = holding_back_.empty() ? kRoundRecords : std::max<size_t>(1, RecordsThatFit() / std::max<size_t>(1, ring_count));
    // A recording that holds back counts its room at what a record or a
    // page may cost its stream (RecordStreamSender::RoomFor): a page weighs
    // one record then, not a page's work, so that a round takes as many
    // pages as the room has (fewer would put more of a cpu's pages in later
    // rounds, out of time order) and never one more.
    page_weight_ = !holding_back_.empty() && page_keeper_ && page_keeper_->buffer().entries() == 0
                       ? 1
                       : ring::RingReader::kPageWeight;
    const uint64_t before = deliver_now ? UINT64_MAX : RoundTimeLimit(share);
    bool held_back = false;  // some ring has records after `before` left
    size_t round_drained = 0;
    for (size_t k = 0; k < ring_count; ++k) {
      RingSource& src = rings_[(first + k) % ring_count];
      if (src.follows && WaitsForRingBefore(src)) continue;
      // A holding-back instance that is full leaves the rest in the rings;
      // a full page arena ends the round.
      const size_t pages_left = kMaxStagedPages - staged_pages_.size();
      const size_t max_records = std::min({share, RecordsThatFit(), pages_left * page_weight_});
      if (max_records == 0) {
        more |= pages_left == 0;
        break;
      }
      size_t begin = drained_.size();
      uint64_t position = src.reader->position();
      const size_t drained = DrainRing(src, max_records, HeldBackTooLong(src) ? UINT64_MAX : before,
                                       deliver_now ? &delivered_now : nullptr);
      if (drained >= max_records) more = true;
      const bool held = drained < max_records && before != UINT64_MAX && !src.reader->empty() &&
                        !src.reader->holding_open_page();
      NoteHeldBack(src, held);
      held_back |= held;
      round_drained += drained;
      total.bytes += src.reader->position() - position;
      if (drained_.size() > begin) runs_.push_back({begin, drained_.size()});
      if (drained_.size() >= kRoundStagedRecords) {
        more = true;
        break;
      }
    }
    if (!deliver_now) {
      if (!staged_pages_.empty()) TakeOverlappingPagesApart();
      DeliverInTimeOrder(page_keeper_ != nullptr);
      for (RingSource& src : rings_) src.reader->Release();  // the staged records are copied out
    }
    // Records the time limit left go in the next round, while rounds bring
    // something.
    if (held_back && round_drained > 0) more = true;
    // Readers take their share between rounds, so a burst longer than an
    // instance buffer still reaches a reader that keeps up.
    PumpRecordStreams();
    total.records += drained_.size() + delivered_now;
    if (!more || base::MonotonicNs() > pass_end) break;
  }
  // When the first page left open is due to be taken anyway, for the event
  // loop to wake up by then; not while a full recorder has the rings left
  // alone (its poke comes first).
  open_page_due_ns_ = UINT64_MAX;
  if (!OnlyConsumerIsAFullRecorder()) {
    for (const RingSource& src : rings_) {
      if (src.reader->holding_open_page()) {
        open_page_due_ns_ = std::min(open_page_due_ns_, src.held_since_ns + kOpenPageHoldNs);
      }
    }
  }
  // Rings of exited threads and processes, and rings outgrown, go once
  // they are empty; a closed one's memory with them, which its thread may
  // still map.
  std::erase_if(rings_, [&](const RingSource& src) {
    bool owner_gone = !connections_.contains(src.owner);
    bool done = src.reader->broken() || ((src.reader->closed() || owner_gone) && src.reader->empty());
    if (!done) return false;
    if (src.reader->closed() && !src.reader->broken()) src.reader->DiscardData();
    quotas_.Release(src.uid, Resource::kRingBytes, src.bytes);
    return true;
  });
  return total;
}

// Whether the ring `src` took over from still has records, which go first;
// once it is drained or gone, `src` follows nothing.
bool Server::WaitsForRingBefore(RingSource& src) {
  for (const RingSource& before : rings_) {
    if (before.serial == src.follows) {
      if (!before.reader->empty()) return true;
      break;
    }
  }
  src.follows = 0;
  return false;
}

// A recorder that is the only consumer and has no room in its stream, nor
// (when its records wait in its instance's buffer, as CTF's and Perfetto's
// do) in that buffer, nor, when the daemon writes its file and its records
// go straight to that file's pages, a page to put them in: the rings are
// left as they are until it pokes us or a write ends, and their producers
// drop what does not fit and count it, which costs nobody anything.
// Draining them would move the same loss here, after the work of checking
// and copying each event, and leave the recorder less of the CPU it needs
// to catch up. A flight recorder's buffer is never full: it keeps the
// newest. A request that drains first (the recording's own end, at
// tracing_on 0) is not kept waiting for the disk: what it drains then is
// dropped and counted.
bool Server::OnlyConsumerIsAFullRecorder() {
  for (const auto& [_, conn] : connections_) {
    if (!conn->record_stream) continue;
    RecordStreamSender& stream = *conn->record_stream;
    const Instance* instance = stream.instance();
    const bool direct = instance->taker() == &stream;
    bool full, disk_behind = false;
    if (conn->stream_waits) {
      const TraceBuffer& buffer = instance->buffer();
      full = direct || (!buffer.overwrite() && buffer.RoomFor(kMaxRecordBytes) == 0);
    } else {
      full = disk_behind = direct && !flush_open_pages_ && stream.FileOutOfPages();
    }
    if (!full || instance->HasSoftMode() || !instances_->OnlyOneTakesEventsIn(*instance)) continue;
    if (disk_behind) {
      for (RingSource& src : rings_) src.left_for_disk = true;
    }
    return true;
  }
  return false;
}

// Which instances hold their events back (blocking_timeout_ms, and a lone
// recording's buffer), and how long the producers' rings let a writer wait
// for room: the longest of the timeouts, or 0 when none holds back.
void Server::UpdateHoldBack() {
  const uint64_t now = base::MonotonicNs();
  holding_back_.clear();
  uint32_t wait_ms = 0;
  auto consider = [&](Instance& instance) {
    if (!instance.HoldsBack(now, kMaxRecordBytes)) return;
    holding_back_.push_back(&instance);
    wait_ms = std::max(wait_ms, instance.blocking_timeout_ms());
  };
  consider(instances_->top());
  for (auto& [_, instance] : instances_->named()) consider(*instance);
  // A recording whose records wait in its buffer (`udiag export`'s) and
  // that alone takes events in bounds the rounds by its buffer's room too,
  // without making writers wait: what does not fit stays in the rings
  // rather than be drained and copied only to be dropped in the buffer.
  for (const auto& [_, conn] : connections_) {
    Instance* instance = conn->record_stream ? conn->record_stream->instance() : nullptr;
    if (!instance || instance->taker() || instance->buffer().overwrite() || instance->HasSoftMode() ||
        !instances_->OnlyOneTakesEventsIn(*instance) || std::ranges::count(holding_back_, instance) != 0) {
      continue;
    }
    holding_back_.push_back(instance);
  }
  if (wait_ms != writer_wait_ms_) {
    writer_wait_ms_ = wait_ms;
    for (RingSource& src : rings_) src.reader->SetWriterWait(wait_ms);
    // And the rings we have not mapped yet (a thread's first write does not
    // wait for us to map its ring).
    status_page_->SetRingFullWaitMs(wait_ms);
  }
}

// Records this round may still take from a ring: kRoundRecords, or fewer
// when an instance that holds rounds back (UpdateHoldBack) has room for
// fewer (counting the drained records not delivered yet), so that none of
// them is dropped there.
size_t Server::RecordsThatFit() const {
  size_t room = kRoundRecords + drained_.size();
  for (const Instance* instance : holding_back_) room = std::min(room, instance->RoomFor(kMaxRecordBytes));
  return room > drained_.size() ? room - drained_.size() : 0;
}

// Copies a record out of its ring to where it goes, checking it there: the
// page of `direct` (the event's only taker, or null), continuing `run`, or
// scratch space on its way to the instances. False when it is rejected.
// Inline: it runs once per record.
[[gnu::always_inline]] inline bool Server::DeliverRecord(PageRun& run, Instance* direct, const Event& event, const EntryMeta& meta,
                           const ring::PayloadSource& payload) {
  const uint32_t record_size = schema::kCommonHeaderSize + payload.size();
  uint8_t* const in_page = direct ? run.Reserve(direct, event, meta, record_size) : nullptr;
  uint8_t* const record = in_page ? in_page : scratch_.get();
  if (!BuildRecord(record, event, meta.tid, payload)) {
    ++records_rejected_;
    return false;
  }
  if (in_page) {
    run.Commit();
  } else {
    run.End();
    instances_->Deliver(event, meta, {record, record_size});
  }
  return true;
}

// Reads up to max_records of one ring's next records, after checking their
// headers again: the producer may have written anything. Each is either
// delivered at once (with `delivered_now`, counted there) or staged in
// drained_, its payload left in the ring until DeliverInTimeOrder copies it.
// Returns the records read (kept or rejected), a whole page counting as
// page_weight_: it may pass max_records by less than that.
size_t Server::DrainRing(RingSource& src, size_t max_records, uint64_t before, size_t* delivered_now) {
  if (uint64_t lost = src.reader->TakeLost()) instances_->NoteLost(lost, src.left_for_disk);
  src.left_for_disk = false;
  auto conn = connections_.find(src.owner);
  // A dead producer's rings may still hold its events: they were checked
  // when it registered them, and ids are not reused soon.
  const std::vector<bool>* writable = conn == connections_.end() ? nullptr : &conn->second->writable;
  bool tsc = src.reader->clock() == ring::ClockDomain::kTsc;
  // Nothing drained now was stamped later than now: a hostile producer's
  // far-future stamps are clamped before they reach the shared clock.
  const uint64_t latest = tsc ? __rdtsc() : base::MonotonicNs();
  // A thread mostly writes one event after another: look the type up when it
  // changes (nothing here changes events or permissions).
  uint32_t last_type = UINT32_MAX;
  const Event* last_allowed = nullptr;  // the event of last_type if this producer may write it
  // The instance that takes last_type's records straight to its recorder
  // (InstanceSet::DirectTakerOf), when the records are delivered as they are
  // drained. Looked up again at each change of type: a trigger that fired on
  // another type's record may have changed what it keeps.
  Instance* direct = nullptr;
  PageRun run;
  auto check = [&](const ring::RecordHead& rec) -> const Event* {
    if (rec.type != last_type) {
      last_type = rec.type;
      last_allowed = AllowedEvent(rec.type, writable);
      direct = last_allowed && delivered_now ? instances_->DirectTakerOf(*last_allowed) : nullptr;
    }
    if (!last_allowed || rec.payload_size < last_allowed->desc.min_size) {
      ++records_rejected_;
      return nullptr;
    }
    return last_allowed;
  };
  auto to_ns = [&](uint64_t stamp) { return tsc ? tsc_clock_.ToMonotonic(stamp) : stamp; };
  auto meta_of = [&](const ring::RecordHead& rec) {
    return EntryMeta{to_ns(std::min(rec.timestamp, latest)), static_cast<uint32_t>(src.pid), src.tid, rec.cpu};
  };
  auto take_record = [&](const ring::RecordHead& rec, const ring::PayloadSource& payload) {
    const Event* event = check(rec);
    if (!event) return;
    if (!delivered_now) {
      drained_.push_back({event, meta_of(rec), payload});
    } else if (DeliverRecord(run, direct, *event, meta_of(rec), payload)) {
      ++*delivered_now;
    }
  };
  if (!page_keeper_) {
    const size_t drained = delivered_now ? src.reader->DrainHeads(take_record, max_records)
                                         : src.reader->Stage(take_record, max_records, before);
    run.End();
    return drained;
  }

  // A recording that takes whole pages: each closed page is copied, checked
  // and rewritten for trace.dat in the copy, and staged (or delivered) as
  // one item; a page it cannot take whole is taken event by event. The copy
  // goes into the record stream's pool when it has a page free, so that the
  // stream sends it without copying it again; else into the arena.
  auto event_of = [&](uint16_t type) -> const Event* {
    const Event* found = AllowedEvent(type, writable);
    return found && instances_->DirectTakerOf(*found) == page_keeper_ ? found : nullptr;
  };
  RecordTaker* const taker = page_keeper_->taker();
  const uint64_t long_span = tsc ? tsc_clock_.TicksIn(kMaxWholePageSpanNs) : kMaxWholePageSpanNs;
  auto take_page = [&](const ring::PageHead& head, const ring::PayloadSource& page) {
    // A page whose next one began that long after it is most likely a slow
    // thread's that spans as long: taken event by event without the copy
    // and check it would fail (a false guess only costs a page taken apart).
    if (!delivered_now && head.next_timestamp - head.timestamp > long_span &&
        head.next_timestamp != UINT64_MAX) {
      ring::RingReader::StageEventsOfPage(page, take_record);
      return;
    }
    uint8_t* const lent = taker->LendPage(head.cpu);
    uint8_t* const copy =
        lent ? lent : page_arena_.get() + (delivered_now ? 0 : staged_pages_.size() * ring::kRingPageSize);
    page.CopyPageTo(copy);
    // The page may have been closed after `latest` was read: now is as late.
    const uint64_t now_stamp = tsc ? __rdtsc() : base::MonotonicNs();
    base::TscClock::Line line;
    StagedPage staged{{}, page, writable, now_stamp, tsc, lent != nullptr};
    if (!PageLine(tsc, head.timestamp, now_stamp, &line) ||
        !CheckPage(copy, src.tid, now_stamp, event_of, line, &staged.checked) ||
        (!delivered_now && staged.checked.span_ns > kMaxWholePageSpanNs)) {
      if (lent) taker->GiveBackPage(lent);
      ring::RingReader::StageEventsOfPage(page, take_record);
      return;
    }
    const EntryMeta meta{staged.checked.first_ns, static_cast<uint32_t>(src.pid), src.tid, head.cpu};
    if (delivered_now) {
      run.End();
      DeliverPage(meta, staged);
      *delivered_now += staged.checked.events;
    } else {
      drained_.push_back({nullptr, meta, page, static_cast<uint32_t>(staged_pages_.size())});
      staged_pages_.push_back(staged);
    }
  };
  const uint64_t now = base::MonotonicNs();
  const uint64_t held_if_since = delivered_now ? 0 : HeldIfSince(tsc, latest);
  const size_t drained = src.reader->StagePages(take_record, take_page, max_records, HoldsOpenPage(src, now),
                                                held_if_since, page_weight_, before);
  if (src.reader->holding_open_page() && src.held_at != src.reader->position()) {
    src.held_at = src.reader->position();
    src.held_since_ns = now;
  }
  run.End();
  if (delivered_now) src.reader->Release();
  return drained;
}

// Among several rings, an open page whose first event is older than a
// whole page may span is a slow thread's: taken event by event at once,
// like its pages. The time, in the ring's clock, an open page must have
// begun at or after to be held.
uint64_t Server::HeldIfSince(bool tsc, uint64_t latest) const {
  const uint64_t span = tsc ? tsc_clock_.TicksIn(kMaxWholePageSpanNs) : kMaxWholePageSpanNs;
  return latest > span ? latest - span : 0;
}

// The time, in the rings' clock, up to which a round reads every ring: the
// earliest at which a ring's `share` of records ends (or the page it would
// hold open begins). Each cpu gets its events in time order only within a
// round, so a ring read past a time where another one stops would have the
// next round bring that cpu events older than some already delivered. A
// page counts as kMostRecordsPerPage records on the way records are
// staged one by one, so that the limit comes before the share ends.
// UINT64_MAX, no limit, for rings on different clocks.
uint64_t Server::RoundTimeLimit(size_t share) {
  if (rings_.size() < 2) return UINT64_MAX;
  const bool tsc = rings_.front().reader->clock() == ring::ClockDomain::kTsc;
  const uint64_t now = base::MonotonicNs();
  const uint64_t latest = tsc ? __rdtsc() : now;
  const uint64_t held_if_since = HeldIfSince(tsc, latest);
  const size_t per_page = page_keeper_ ? page_weight_ : kMostRecordsPerPage;
  const size_t pages = std::max<size_t>(1, std::min(share / per_page, kMaxStagedPages / rings_.size()));
  uint64_t limit = UINT64_MAX;
  for (RingSource& src : rings_) {
    if (src.reader->clock() != rings_.front().reader->clock()) return UINT64_MAX;
    const bool waits = src.follows && WaitsForRingBefore(src);
    const bool holds = page_keeper_ && HoldsOpenPage(src, now);
    limit = std::min(limit, src.reader->TimeAfterPages(waits ? 0 : pages, holds, held_if_since));
  }
  return limit;
}

// Whether the round's time limit has kept `src` from reading on for
// kMaxHeldBackRounds: then it reads on regardless, its share of a round.
bool Server::HeldBackTooLong(const RingSource& src) const {
  return src.held_back_rounds > kMaxHeldBackRounds;
}

void Server::NoteHeldBack(RingSource& src, bool held_back) {
  src.held_back_rounds = held_back ? src.held_back_rounds + 1 : 0;
}

// The line a page's times go to ns along: from its start (at most `now`),
// in the ring's clock; false when it does not reach `now` (then the page
// goes event by event, each converted on its own).
bool Server::PageLine(bool tsc, uint64_t page_start, uint64_t now, base::TscClock::Line* line) {
  page_start = std::min(page_start, now);
  if (!tsc) {  // ns already: the identity, for as long as the product fits
    *line = {page_start, page_start, uint64_t{1} << 32};
    return now - page_start < (uint64_t{1} << 32);
  }
  *line = tsc_clock_.LineAt(page_start);
  return line->Reaches(now);
}

// Whether a recording that takes whole pages leaves the events of the page
// `src`'s producer is still filling for later: not when asked to flush,
// when the thread or process is gone, or once reading has waited at the
// same place for kOpenPageHoldNs.
bool Server::HoldsOpenPage(const RingSource& src, uint64_t now) const {
  if (flush_open_pages_ || src.reader->closed() || !connections_.contains(src.owner)) return false;
  return src.held_at != src.reader->position() || now - src.held_since_ns < kOpenPageHoldNs;
}

// The event a record of `type` is, when a producer with `writable` (null:
// gone) may write it.
const Event* Server::AllowedEvent(uint16_t type, const std::vector<bool>* writable) const {
  const Event* found = registry_->FindById(type);
  return found && (!writable || (*writable)[type - EventRegistry::kFirstId]) ? found : nullptr;
}

// Hands sink(event, meta, payload) each record of a staged page that does
// not go whole, its payload still to be copied out and checked: from the
// page's checked copy, or, when that copy is in the record stream's pool
// (not trusted after its check), from its ring, each record's header
// checked again as DrainRing checks one; the pool page is given back.
template <typename Sink>
void Server::ForEachRecordOfStagedPage(StagedPage& page, const EntryMeta& meta, Sink&& sink) {
  if (page.lent) {
    page_keeper_->taker()->GiveBackPage(page.checked.page);
    ring::RingReader::StageEventsOfPage(page.source, [&](const ring::RecordHead& rec, const ring::PayloadSource& payload) {
      const Event* event = AllowedEvent(rec.type, page.writable);
      if (!event || rec.payload_size < event->desc.min_size) {
        ++records_rejected_;
        return;
      }
      const uint64_t stamp = std::min(rec.timestamp, page.latest);
      sink(*event, EntryMeta{page.tsc ? tsc_clock_.ToMonotonic(stamp) : stamp, meta.pid, meta.tid, rec.cpu}, payload);
    });
    return;
  }
  uint64_t lost = 0;
  record::tracedat::ForEachPageRecord(
      {page.checked.page, ring::kRingPageSize}, record::tracedat::kLongSize, &lost,
      [&](const record::tracedat::PageRecord& record) {
        uint16_t type;
        std::memcpy(&type, record.data.data(), sizeof(type));
        const Event* event = registry_->FindById(type);  // checked with the page
        if (!event) return;
        const auto size = static_cast<uint32_t>(record.data.size() - schema::kCommonHeaderSize);
        sink(*event, EntryMeta{record.timestamp, meta.pid, meta.tid, meta.cpu},
             ring::PayloadSource::InCheckedCopy(record.data.data() + schema::kCommonHeaderSize, size));
      });
}

// A checked page goes to the recording whole, unless records wait in its
// instance's buffer: then its records follow them one by one.
void Server::DeliverPage(const EntryMeta& meta, StagedPage& page) {
  if (page_keeper_->HandOverPage(meta, page.checked)) return;
  PageRun run;
  ForEachRecordOfStagedPage(page, meta, [&](const Event& event, const EntryMeta& at, const ring::PayloadSource& payload) {
    DeliverRecord(run, nullptr, event, at, payload);
  });
}

// A staged page on a cpu where another ring has something staged between
// its first and last event (page_overlap.h) is replaced by its records,
// from its checked copy, so that the merge interleaves them, and so is such
// a page of the other ring. Each run stays in time order.
void Server::TakeOverlappingPagesApart() {
  apart_.assign(staged_pages_.size(), false);
  const bool any = MarkOverlappingPages(runs_, [&](size_t i) {
    const DrainedRecord& d = drained_[i];
    if (d.event) return TimedItem{d.meta.timestamp, d.meta.cpu};
    return TimedItem{d.meta.timestamp, d.meta.cpu, d.page, staged_pages_[d.page].checked.span_ns};
  }, apart_);
  if (!any) return;
  regrouped_.clear();
  for (TimeRun& run : runs_) {
    const size_t begin = regrouped_.size();
    for (size_t i = run.begin; i < run.end; ++i) {
      const DrainedRecord& d = drained_[i];
      if (d.event || !apart_[d.page]) {
        regrouped_.push_back(d);
        continue;
      }
      ForEachRecordOfStagedPage(staged_pages_[d.page], d.meta,
                                [&](const Event& event, const EntryMeta& at, const ring::PayloadSource& payload) {
                                  regrouped_.push_back({&event, at, payload});
                                });
    }
    run = {begin, regrouped_.size()};
  }
  drained_.swap(regrouped_);
}

// Each ring's run is in time order already (one thread, one clock), so the
// runs are merged rather than sorted: into one time order, or, when the
// records all go into a recorder's per-cpu pages, into one per cpu. Each
// record is copied out of its ring once, into its page or scratch space.
void Server::DeliverInTimeOrder(bool per_cpu) {
  const Event* last_event = nullptr;
  Instance* direct = nullptr;  // as in DrainRing
  PageRun run;
  auto time = [&](size_t i) { return drained_[i].meta.timestamp; };
  auto deliver = [&](size_t i) {
    DrainedRecord& d = drained_[i];
    if (!d.event) {
      run.End();
      DeliverPage(d.meta, staged_pages_[d.page]);
      return;
    }
    if (d.event != last_event) {
      last_event = d.event;
      direct = instances_->DirectTakerOf(*d.event);
    }
    DeliverRecord(run, direct, *d.event, d.meta, d.payload);
  };
  if (per_cpu) {
    MergeRunsInTimeOrderPerKey(
        runs_, cpu_stretches_, cpu_runs_, [&](size_t i) { return drained_[i].meta.cpu; }, time, deliver);
  } else {
    MergeRunsInTimeOrder(runs_, time, deliver);
  }
  run.End();
}

}  // namespace udiag::service
