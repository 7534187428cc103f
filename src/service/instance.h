// Trace instances: the top-level one and instances/<name>/ made by mkdir.
// Each has its own buffer, tracing_on switch, overwrite mode, snapshot and set
// of enabled events; an event's ftrace status bit is set while any instance
// enables it, and each enabling instance holds a reference on the event, as a
// kernel tracer probe does.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "record/tracedat/page_encoder.h"
#include "service/error_log.h"
#include "service/event_filters.h"
#include "service/event_probe.h"
#include "service/event_registry.h"
#include "service/event_triggers.h"
#include "service/page_check.h"
#include "service/trace_buffer.h"

namespace udiag::service {

inline constexpr size_t kDefaultBufferKb = 4096;
// Bounds what one consumer can make the daemon hold (each buffer fills only when used).
inline constexpr size_t kMaxInstances = 1024;

// Takes a record session's records instead of its buffer: the recorder's
// stream (RecordStreamSender in page mode) puts them straight into trace.dat
// pages, with no copy into the buffer and out again.
class RecordTaker {
 public:
  virtual ~RecordTaker() = default;
  // `lost_before`: records this instance lost just before this one.
  virtual void Take(const Event& event, const EntryMeta& meta, uint64_t lost_before,
                    std::span<const uint8_t> record) = 0;
  // Take in place, a run at a time, for the drain loop's common case: the
  // page that `event`'s next records from meta's thread and cpu are built
  // in (PageEncoder::Reserve, Commit) while they fit on it, or null when
  // the next record must go through Take (a loss to mark, a backlog, the
  // cpu's first record). Nothing else reaches the taker before EndRun, which
  // says how many records the run committed.
  virtual record::tracedat::PageEncoder* StartRun(const Event& event, const EntryMeta& meta) = 0;
  virtual void EndRun(uint16_t type, uint32_t records) = 0;
  // A whole page of records from meta's thread on meta.cpu (page_check.h),
  // kept as it is; `lost_before` records were lost just before it. The
  // taker may mark that on the page.
  virtual void TakePage(const EntryMeta& meta, CheckedPage& page, uint64_t lost_before) = 0;
  // A page where TakePage sends a page of `cpu` without copying it (the
  // record stream's pool, or its file's pages), to copy a producer's page
  // into and check it there, or null when none is free (or the page would
  // not go next in its file's memory). TakePage takes such
  // a page back, as does GiveBackPage when it is not taken whole.
  virtual uint8_t* LendPage(uint16_t cpu) {
    (void)cpu;
    return nullptr;
  }
  virtual void GiveBackPage(const uint8_t* page) { (void)page; }
  // How many more records of up to `record_bytes`, or whole pages, the
  // taker can take now without dropping any (for an instance that holds
  // producers back instead).
  virtual size_t RoomFor(size_t record_bytes) {
    (void)record_bytes;
    return SIZE_MAX;
  }
};

class Instance {
 public:
  explicit Instance(std::string name) : name_(std::move(name)), buffer_(kDefaultBufferKb * 1024) {}

  const std::string& name() const { return name_; }
  TraceBuffer& buffer() { return buffer_; }
  const TraceBuffer& buffer() const { return buffer_; }
  bool tracing_on() const { return tracing_on_; }
  void set_tracing_on(bool on) { tracing_on_ = on; }
  bool IsEnabled(uint32_t id) const { return enabled_.contains(id); }
  // Whether the instance takes the event's records in: enabled or in soft mode.
  bool Registered(uint32_t id) const { return IsEnabled(id) || InSoftMode(id); }
  const std::set<uint32_t>& enabled() const { return enabled_; }
  // The kernel's soft mode: triggers on the event (or enable_event aimed at
  // it) make it fire in this instance while not enabled; its `enable` file
  // shows a '*'. Only an enabled event's records are kept.
  bool InSoftMode(uint32_t id) const { return soft_refs_.contains(id); }
  bool Keeps(uint32_t id) const { return soft_refs_.empty() || IsEnabled(id); }
  // Whether any event's records come in: enabled, or in soft mode (triggers).
  bool TakesEventsIn() const { return !enabled_.empty() || !soft_refs_.empty(); }
  bool HasSoftMode() const { return !soft_refs_.empty(); }
  // enable_event/disable_event firing: the event stays registered by its soft mode.
  void SetSoftEnabled(uint32_t id, bool on) {
    if (on) {
      enabled_.insert(id);
    } else {
      enabled_.erase(id);
    }
  }
  // The `filter` files of this instance's events, and its `error_log`.
  EventFilters& filters() { return filters_; }
  const EventFilters& filters() const { return filters_; }
  // The `trigger` files of this instance's events.
  EventTriggers& triggers() { return triggers_; }
  const EventTriggers& triggers() const { return triggers_; }
  ErrorLog& error_log() { return error_log_; }
  const ErrorLog& error_log() const { return error_log_; }

  // `blocking_timeout_ms`: 0 (the default) drops what does not fit, as
  // ftrace does. Otherwise, while the buffer is in discard-new mode, its
  // events wait in the producers' rings instead of being dropped here, and a
  // producer whose ring is full waits up to this long for room.
  uint32_t blocking_timeout_ms() const { return blocking_timeout_ms_; }
  void set_blocking_timeout_ms(uint32_t ms) { blocking_timeout_ms_ = ms; }
  // Whether this instance holds its events back now: it blocks, is on,
  // enables something, and its buffer had room or was read within the
  // timeout. A reader that stops for longer (stopped, or never came) lets
  // events be dropped again rather than stall every producer.
  bool HoldsBack(uint64_t now_ns, size_t max_record_bytes);
  // Records of up to `record_bytes` this instance can keep now without
  // dropping any: its taker's room while the taker takes them, else its buffer's.
  size_t RoomFor(size_t record_bytes) const {
    return taker_ && buffer_.entries() == 0 ? taker_->RoomFor(record_bytes) : buffer_.RoomFor(record_bytes);
  }

  // `usdt_probe` (ours): the events this instance enables fire udiagd's USDT
  // probe (service/event_probe.h) instead of filling its buffer.
  bool usdt_probe() const { return usdt_probe_; }
  void set_usdt_probe(bool on) { usdt_probe_ = on; }

  // `snapshot`: a frozen copy of the buffer, or null when freed.
  const TraceBuffer* snapshot() const { return snapshot_.get(); }
  void TakeSnapshot() { snapshot_ = buffer_.Copy(); }
  // A snapshot trigger allocates an empty snapshot, as the kernel's does.
  void AllocateSnapshot() {
    if (!snapshot_) snapshot_ = std::make_unique<TraceBuffer>(buffer_.capacity());
  }
  void FreeSnapshot() { snapshot_.reset(); }
  // `echo 2 > snapshot`: empties an allocated snapshot, keeps a freed one freed.
  void ClearSnapshot() {
    if (snapshot_) snapshot_->Clear();
  }

  // The record stream that takes the records instead of the buffer, or null.
  // It takes them only while the buffer is empty (what is in it goes first)
  // and the buffer is not a flight recorder; otherwise they are appended to
  // the buffer as usual. With `--block`, the drain takes no more than the
  // taker has room for (RoomFor).
  RecordTaker* taker() const { return taker_; }
  void set_taker(RecordTaker* taker) { taker_ = taker; }
  // Keeps one record that passed the filters: in the buffer, or handed over.
  void Keep(const Event& event, const EntryMeta& meta, std::span<const uint8_t> record) {
    if (taker_ && buffer_.entries() == 0 && !buffer_.overwrite()) {
      taker_->Take(event, meta, buffer_.TakePendingLost(), record);
    } else {
      buffer_.Append(meta, record);
    }
  }

  // Whether `event`'s records, when this is the only instance taking them
  // in, may skip Deliver and Keep for a run in the taker's page (PageRun):
  // nothing of this instance looks at them on the way (no trigger, filter
  // or probe).
  bool HandsOverDirectly(const Event& event) const {
    return taker_ && tracing_on_ && !usdt_probe_ && Keeps(event.id) && !triggers_.Has(event) &&
           !filters_.Has(event) && !buffer_.overwrite();
  }
  // Whether every record this instance keeps goes to its recorder's per-cpu
  // pages, with nothing that depends on the order of records across cpus
  // (a trigger may act on what another cpu did just before).
  bool KeepsInPerCpuPages() const {
    return taker_ && !usdt_probe_ && !HasSoftMode() && !triggers_.Any() && !buffer_.overwrite();
  }
  // The taker's StartRun while Keep would hand over (the buffer empty and
  // no loss to report first), else null.
  record::tracedat::PageEncoder* StartHandOverRun(const Event& event, const EntryMeta& meta) {
    if (buffer_.entries() != 0 || buffer_.pending_lost() != 0) return nullptr;
    return taker_->StartRun(event, meta);
  }
  void EndHandOverRun(uint16_t type, uint32_t records) { taker_->EndRun(type, records); }
  // Hands a whole page to the taker, when KeepsInPerCpuPages and every
  // record on it is one HandsOverDirectly: false, with nothing done, while
  // the buffer holds records that must go first.
  bool HandOverPage(const EntryMeta& meta, CheckedPage& page) {
    if (buffer_.entries() != 0) return false;
    taker_->TakePage(meta, page, buffer_.TakePendingLost());
    return true;
  }

  // The connection whose closing removes this instance (a record session), or 0.
  uint64_t owner() const { return owner_; }
  // Open trace_pipe readers and record streams: rmdir is EBUSY while any is.
  int readers() const { return readers_; }
  // A second reader shares the buffer: nothing is handed over any more.
  void AddReader() {
    ++readers_;
    taker_ = nullptr;
  }
  void RemoveReader() { --readers_; }
  int record_streams() const { return record_streams_; }
  void AddRecordStream() {
    ++record_streams_;
    taker_ = nullptr;
  }
  void RemoveRecordStream() { --record_streams_; }
  // A record session: owned by a connection or read by a record stream.
  bool records() const { return owner_ != 0 || record_streams_ > 0; }

 private:
  friend class InstanceSet;
  std::string name_;
  TraceBuffer buffer_;
  bool tracing_on_ = true;
  bool usdt_probe_ = false;
  std::set<uint32_t> enabled_;
  std::map<uint32_t, int> soft_refs_;  // event id -> triggers holding its soft mode
  EventFilters filters_;
  EventTriggers triggers_;
  ErrorLog error_log_;
  std::unique_ptr<TraceBuffer> snapshot_;
  uint64_t owner_ = 0;
  uint32_t blocking_timeout_ms_ = 0;
  uint64_t reads_seen_ = 0;        // the buffer's read count at last_progress_ns_
  uint64_t last_progress_ns_ = 0;  // when it last had room or was read
  int readers_ = 0;
  int record_streams_ = 0;
  RecordTaker* taker_ = nullptr;
};

class InstanceSet {
 public:
  explicit InstanceSet(EventRegistry* registry);
  ~InstanceSet();

  Instance& top() { return top_; }
  // "" is the top instance.
  Instance* Find(std::string_view name);
  // Named instances, by name.
  const std::map<std::string, std::unique_ptr<Instance>, std::less<>>& named() const { return named_; }

  // mkdir instances/<name>: EEXIST, EINVAL for a name that is not one path
  // component, ENOSPC beyond kMaxInstances. `owner` is the connection it
  // dies with (0: none).
  int Create(std::string_view name, uint64_t owner);
  // rmdir instances/<name>: ENOENT, or EBUSY while it has readers (the
  // caller detaches them first when removal is forced). Releases its enables.
  int Remove(std::string_view name);

  // Enables or disables `event` in `instance`, keeping references and the
  // event's ftrace status bit right. Idempotent.
  void SetEnabled(Instance& instance, Event* event, bool on);
  // Takes or drops one soft-mode reference on `event` in `instance` (triggers).
  void SetSoftMode(Instance& instance, Event* event, bool on);
  EventRegistry& registry() { return *registry_; }
  // Whether any record session enables the event (user_events_status "record").
  bool RecordedBy(uint32_t id) const;
  // Copies a record into every instance that enables its event, is on and
  // whose filter for the event it passes, and fires the USDT probe once if a
  // probe instance among them does. Inline: the drain loop calls it once per
  // record.
  void Deliver(const Event& event, const EntryMeta& meta, std::span<const uint8_t> record) {
    size_t slot = event.id - EventRegistry::kFirstId;
    if (slot >= enablers_.size()) return;
    bool probe = false;
    for (Instance* instance : enablers_[slot]) {
      // Triggers first: they see the record whatever tracing_on, enable and the filter say.
      if (instance->triggers().Has(event)) {
        instance->triggers().Fire(*this, *instance, event, meta, record, comm_);
      }
      if (!instance->tracing_on() || !instance->Keeps(event.id) ||
          !instance->filters().Accepts(event, meta, record, comm_)) {
        continue;
      }
      if (instance->usdt_probe()) {
        probe = true;
      } else {
        instance->Keep(event, meta, record);
      }
    }
    if (probe && EventProbeAttached()) FireEventProbe(event.id, meta, record);
  }
  // The instance that takes `event`'s records straight to its recorder
  // (Instance::HandsOverDirectly) when it is the only one taking them in,
  // else null: then Deliver.
  Instance* DirectTakerOf(const Event& event) {
    size_t slot = event.id - EventRegistry::kFirstId;
    if (slot >= enablers_.size() || enablers_[slot].size() != 1) return nullptr;
    Instance* instance = enablers_[slot].front();
    return instance->HandsOverDirectly(event) ? instance : nullptr;
  }
  // Whether `only` is the one instance taking any event's records in.
  bool OnlyOneTakesEventsIn(const Instance& only) const {
    if (&top_ != &only && top_.TakesEventsIn()) return false;
    for (const auto& [_, instance] : named_) {
      if (instance.get() != &only && instance->TakesEventsIn()) return false;
    }
    return true;
  }
  // The one instance taking events in, when it keeps them in per-cpu pages
  // (KeepsInPerCpuPages), else null: then drained records need time order
  // only per cpu, and it may be handed whole ring pages (HandOverPage) of
  // the events it takes directly.
  Instance* PerCpuPageKeeper() {
    Instance* only = nullptr;
    if (top_.TakesEventsIn()) only = &top_;
    for (const auto& [_, instance] : named_) {
      if (!instance->TakesEventsIn()) continue;
      if (only) return nullptr;
      only = instance.get();
    }
    return only && only->KeepsInPerCpuPages() ? only : nullptr;
  }
  // How filters name the thread behind a record (COMM).
  void set_comm_lookup(CommLookup comm) { comm_ = std::move(comm); }
  // Producer-ring losses: reported by the top instance and every named one
  // that is on and enables some event. `disk_behind`: the daemon had left
  // the rings alone while a recording's pages waited for the disk.
  void NoteLost(uint64_t count, bool disk_behind = false);

 private:
  bool AnyEnables(uint32_t id) const;
  // After `instance` enabled or soft-moded `event`: joins or leaves its enablers.
  void UpdateRegistration(Instance& instance, Event* event, bool was_registered);
  std::vector<Instance*>* EnablersOf(uint32_t id);
  EventRegistry* registry_;
  Instance top_{""};
  std::map<std::string, std::unique_ptr<Instance>, std::less<>> named_;
  // Event id - kFirstId -> the instances enabling it, for the delivery loop.
  std::vector<std::vector<Instance*>> enablers_;
  CommLookup comm_;
};

}  // namespace udiag::service
