// Records built in place in a recorder's trace.dat page, a run at a time:
// the drain loop's common case, for an event whose only taker is an
// instance that hands its records straight over (Instance::HandsOverDirectly).
// A run is one event's records from one thread on one cpu; its checks
// (losses to mark, backlog, the thread and type announced) are made once,
// at its start, and each record costs a reserve and a commit on the page.
#pragma once

#include <cstdint>

#include "record/tracedat/page_encoder.h"
#include "service/instance.h"

namespace udiag::service {

class PageRun {
 public:
  // Room for `size` bytes (common header and payload) of `event`'s record in
  // `instance`'s recorder page, continuing the run or starting another; null
  // when the record must be delivered the general way (End() was called).
  uint8_t* Reserve(Instance* instance, const Event& event, const EntryMeta& meta, uint32_t size) {
    if (page_ && (instance != instance_ || &event != event_ || meta.cpu != cpu_ || meta.tid != tid_)) End();
    if (!page_) {
      page_ = instance->StartHandOverRun(event, meta);
      if (!page_) return nullptr;
      instance_ = instance;
      event_ = &event;
      cpu_ = meta.cpu;
      tid_ = meta.tid;
    }
    uint8_t* at = page_->Reserve(meta.timestamp, size);
    if (!at) End();  // a full page, a long record or a jump in time: the taker's Take knows what to do
    return at;
  }
  // Keeps the record last reserved.
  void Commit() {
    page_->Commit();
    ++records_;
  }
  // Before any record is delivered the general way, and once draining ends.
  void End() {
    if (!page_) return;
    instance_->EndHandOverRun(static_cast<uint16_t>(event_->id), records_);
    page_ = nullptr;
    records_ = 0;
  }

 private:
  record::tracedat::PageEncoder* page_ = nullptr;  // null: no run
  Instance* instance_ = nullptr;
  const Event* event_ = nullptr;
  uint32_t tid_ = 0;
  uint16_t cpu_ = 0;
  uint32_t records_ = 0;
};

}  // namespace udiag::service
