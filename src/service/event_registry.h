// The daemon's table of user events: find-or-create by registration command,
// type ids, reference counts, auto-delete, persist and explicit delete
// (spec §7, §10, §11.2, §15). It knows nothing about connections; whoever
// holds a reference calls Get/Put.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/error_or.h"
#include "ipc/protocol.h"
#include "schema/event_description.h"
#include "schema/loc_check.h"

namespace udiag::service {

class StatusPage;

// Status bits, as the kernel's: which kinds of tracer are attached.
inline constexpr uint8_t kStatusFtrace = 1 << 0;
inline constexpr uint8_t kStatusPerf = 1 << 1;
inline constexpr uint8_t kStatusOther = 1 << 7;

struct Event {
  uint32_t id = 0;
  std::string tp_name;  // reg name, or "<name>.<hex>" for multi-format
  bool multi_format = false;
  bool persistent = false;  // holds a self reference until deleted
  schema::EventDescription desc;
  std::vector<schema::LocCheck> locs;
  uint8_t status = 0;
  int refs = 0;
  int perf_refs = 0;  // perf_event fds open on it (kStatusPerf while > 0)
  uint64_t created_seq = 0;  // creation order, for dynamic_events

  const std::string& reg_name() const { return desc.name; }
  const char* system() const { return multi_format ? "user_events_multi" : "user_events"; }
};

class EventRegistry {
 public:
  // The kernel numbers its trace events upward from a few dozen (a few
  // thousand on a large config); udiag's ids are the upper half of ftrace's
  // 16-bit common_type, minus any the kernel uses (ReserveIds).
  inline static constexpr uint32_t kFirstId = ipc::kFirstEventId;
  inline static constexpr uint32_t kDefaultMaxEvents = ipc::kLastEventId + 1 - kFirstId;

  class Observer {
   public:
    virtual ~Observer() = default;
    // Just before creating an event: false refuses it with EMFILE (the
    // creator has used up his quota of events).
    virtual bool MayCreateEvent() { return true; }
    // Right after creation, before the creator sees the event.
    virtual void OnEventCreated(Event& event) = 0;
    // After the status changed: enable bits must follow.
    virtual void OnEventStatusChanged(Event& event) = 0;
    // Just before the event is freed; its id may be reused afterwards.
    virtual void OnEventDestroyed(const Event& event) = 0;
  };

  EventRegistry(StatusPage* status_page, Observer* observer);
  ~EventRegistry();

  // §7 find-or-create from a registration command (no "u:"). On success the
  // caller owns one reference. `persist` takes the self reference on a new
  // event. Errors: EINVAL, EADDRINUSE, EMFILE, ENODEV.
  base::ErrorOr<Event*> FindOrCreate(std::string_view command, bool multi_format, bool persist);

  void Get(Event* event) { ++event->refs; }
  // Drops a reference; a non-persistent event with none left is destroyed on
  // the next CollectGarbage() (auto-delete is asynchronous, as the kernel's).
  void Put(Event* event);
  // Destroys events whose last reference went away since the last call.
  void CollectGarbage();

  // §10.4 DIAG_IOCSDEL: every event (single and multi-format) with this reg
  // name. ENOENT, EBUSY, EPERM (persistent and not `privileged`).
  int DeleteByName(std::string_view name, bool privileged);
  // §11.2 dynamic_events delete: name, optional system and field text.
  int DeleteMatching(std::string_view system, std::string_view name, std::string_view args,
                     bool privileged);
  // O_TRUNC open of dynamic_events: deletes every event, or none (EBUSY/EPERM).
  int DeleteAll(bool privileged);

  // Recomputes status from the tracer bits and tells the listener on change.
  void SetStatusBits(Event* event, uint8_t bits, bool on);

  // Ids never to hand out: the running kernel's own trace events.
  void ReserveIds(const std::vector<uint32_t>& ids);

  Event* FindById(uint32_t id) const;
  Event* FindByTracepoint(std::string_view system, std::string_view tp_name) const;
  // Every live event, in creation order.
  std::vector<Event*> Events() const;

  uint32_t max_events() const { return max_events_; }
  void set_max_events(uint32_t max) { max_events_ = max; }
  size_t size() const { return events_.size(); }

 private:
  bool IsLastReference(const Event& event) const;
  void Destroy(Event* event);
  base::ErrorOr<Event*> Create(schema::EventDescription desc, bool multi_format, bool persist);

  StatusPage* status_page_;
  Observer* observer_;
  std::map<uint32_t, std::unique_ptr<Event>> events_;  // by id
  std::vector<Event*> by_slot_;                        // id - kFirstId -> event, for the drain loop
  std::vector<uint32_t> doomed_;                       // ids whose refs hit zero
  std::vector<bool> reserved_;                         // by slot: ids the kernel uses
  uint32_t max_events_ = kDefaultMaxEvents;
  uint32_t next_id_offset_ = 0;
  uint64_t next_multi_id_ = 0;
  uint64_t next_created_seq_ = 0;
};

}  // namespace udiag::service
