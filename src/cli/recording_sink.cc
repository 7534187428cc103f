#include "cli/recording_sink.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "schema/event_description.h"

namespace udiag::cli {

void RecordingSink::OnEventType(const record::EventType& type) {
  if (type.id >= by_id_.size()) by_id_.resize(type.id + 1);
  if (by_id_[type.id].name.empty()) order_.push_back(type.id);
  by_id_[type.id].name = type.system + ":" + type.name;
  writer_->AddEventType(type);
}

void RecordingSink::OnTask(const record::Task& task) {
  pid_of_tid_[task.tid] = task.pid;
  writer_->AddTask(task);
}

void RecordingSink::OnRecord(const record::Record& record) { Take(record, &last_timestamp_); }

// Counts `record` and hands it to the writer, stamped no earlier than
// *last, the time of the record before it in the order the writer gets
// them, which it then becomes.
void RecordingSink::Take(const record::Record& record, uint64_t* last) {
  ++events_;
  bytes_ += record.data.size();
  lost_ += record.lost_before;
  max_cpu_ = std::max(max_cpu_, record.cpu);
  if (record.event_id < by_id_.size()) ++by_id_[record.event_id].count;
  if (record.timestamp >= *last && pending_lost_ == 0) {
    *last = record.timestamp;
    writer_->Write(record);
    return;
  }
  record::Record out = record;
  if (out.timestamp < *last) {
    out.timestamp = *last;
    ++restamped_;
  }
  *last = out.timestamp;
  // Losses reported on their own belong before the next record.
  out.lost_before += std::exchange(pending_lost_, 0);
  writer_->Write(out);
}

bool RecordingSink::OnPage(uint16_t cpu, std::span<const uint8_t> page, const consumer::PageCounts& counts) {
  if (!writer_->KeepsPages()) return TakeRecordsOf(cpu, page, counts);
  return CountPage(cpu, page, counts) && writer_->WritePage(cpu, page);
}

// A page for a writer that keeps none: its records, one by one. They are
// its cpu's in that cpu's time order (the daemon merges pages per cpu, not
// across cpus), so they are kept from going back per cpu, which is all a
// CTF stream or a Perfetto packet sequence (one per cpu) needs.
bool RecordingSink::TakeRecordsOf(uint16_t cpu, std::span<const uint8_t> page,
                                  const consumer::PageCounts& counts) {
  if (cpu >= last_timestamp_of_cpu_.size()) last_timestamp_of_cpu_.resize(cpu + 1);
  uint64_t lost_before = counts.lost_before;
  uint64_t stored_lost = 0;  // the same, as the page says
  bool malformed = false;
  uint32_t last_tid = UINT32_MAX, last_pid = 0;
  const int err = record::tracedat::ForEachPageRecord(
      page, record::tracedat::kLongSize, &stored_lost, [&](const record::tracedat::PageRecord& stored) {
        if (stored.data.size() < schema::kCommonHeaderSize) {  // a page the daemon never sends
          malformed = true;
          return;
        }
        record::Record record;
        uint16_t type = 0;
        uint32_t tid = 0;
        std::memcpy(&type, stored.data.data(), sizeof(type));
        std::memcpy(&tid, stored.data.data() + 4, sizeof(tid));
        if (tid != last_tid) {  // a page is mostly one thread's
          const auto process = pid_of_tid_.find(tid);
          last_tid = tid;
          last_pid = process == pid_of_tid_.end() ? tid : process->second;
        }
        record.timestamp = stored.timestamp;
        record.pid = last_pid;
        record.tid = tid;
        record.cpu = cpu;
        record.event_id = type;
        record.lost_before = std::exchange(lost_before, 0);
        record.data = stored.data;
        Take(record, &last_timestamp_of_cpu_[cpu]);
      });
  return err == 0 && !malformed;
}

bool RecordingSink::OnFilePage(uint16_t cpu, std::span<const uint8_t> page, const consumer::PageCounts& counts) {
  file_synced_ = false;
  if (cpu >= unwritten_.size()) unwritten_.resize(cpu + 1);
  UnwrittenPage& unwritten = unwritten_[cpu].pages.emplace_back(
      UnwrittenPage{counts.events, counts.data_bytes, counts.only_type, {}});
  return CountPage(cpu, page, counts, &unwritten.by_type);
}

bool RecordingSink::OnPagesOnDisk(uint16_t cpu, uint64_t bytes) {
  if (!writer_->PagesOnDisk(cpu, bytes) || cpu >= unwritten_.size()) return false;
  Unwritten& unwritten = unwritten_[cpu];
  const uint64_t pages = bytes / record::tracedat::kPageSize;
  // The daemon reports only pages it counted to us first, and never fewer.
  if (pages < unwritten.pages_on_disk || pages - unwritten.pages_on_disk > unwritten.pages.size())
    return false;
  unwritten.pages.erase(unwritten.pages.begin(),
                        unwritten.pages.begin() + static_cast<ptrdiff_t>(pages - unwritten.pages_on_disk));
  unwritten.pages_on_disk = pages;
  return true;
}

uint64_t RecordingSink::CountUnwrittenAsLost() {
  auto uncount = [&](uint32_t type, uint64_t events) {
    if (type < by_id_.size()) by_id_[type].count -= events;
  };
  uint64_t events = 0;
  for (Unwritten& unwritten : unwritten_) {
    for (const UnwrittenPage& page : unwritten.pages) {
      if (page.only_type != 0) uncount(page.only_type, page.events);
      for (const auto& [type, count] : page.by_type) uncount(type, count);
      events += page.events;
      bytes_ -= page.data_bytes;
    }
    unwritten.pages.clear();
  }
  events_ -= events;
  lost_ += events;
  return events;
}

bool RecordingSink::OnFileError(int error) {
  writer_->PagesFailed(error);
  return true;
}

bool RecordingSink::OnFileSynced() {
  file_synced_ = true;
  return true;
}

// Counted from the daemon's frame: the page itself is read only when it
// holds several types (stored, it is copied, not read).
bool RecordingSink::CountPage(uint16_t cpu, std::span<const uint8_t> page, const consumer::PageCounts& counts,
                              std::vector<TypeCount>* by_type) {
  if (counts.only_type != 0) {
    if (counts.only_type < by_id_.size()) by_id_[counts.only_type].count += counts.events;
  } else if (!CountByType(page, by_type)) {
    return false;
  }
  events_ += counts.events;
  bytes_ += counts.data_bytes;
  lost_ += counts.lost_before;
  max_cpu_ = std::max(max_cpu_, cpu);
  return true;
}

// A page of several types is mostly one event after another: counted per run.
bool RecordingSink::CountByType(std::span<const uint8_t> page, std::vector<TypeCount>* by_type) {
  uint64_t lost = 0;
  uint32_t run = 0;
  uint16_t run_type = 0;
  auto end_run = [&] {
    if (run_type < by_id_.size()) by_id_[run_type].count += run;
    if (by_type && run) by_type->emplace_back(run_type, run);
    run = 0;
  };
  int err = record::tracedat::ForEachPageRecord(page, sizeof(uint64_t), &lost, [&](const record::tracedat::PageRecord& r) {
    uint16_t type = 0;
    if (r.data.size() >= sizeof(type)) std::memcpy(&type, r.data.data(), sizeof(type));
    if (type != run_type) {
      end_run();
      run_type = type;
    }
    ++run;
  });
  end_run();
  return err == 0;
}

void RecordingSink::OnLost(uint64_t count) {
  lost_ += count;
  pending_lost_ += count;
}

std::string RecordingSink::Summary() const {
  size_t width = 5;
  for (uint32_t id : order_) width = std::max(width, by_id_[id].name.size());
  std::string out = fmt::format("  {:<{}}  {:>12}\n", "EVENT", width, "COUNT");
  for (uint32_t id : order_) out += fmt::format("  {:<{}}  {:>12}\n", by_id_[id].name, width, by_id_[id].count);
  out += fmt::format("  {:<{}}  {:>12}\n", "(lost, any event)", width, lost_);
  return out;
}

}  // namespace udiag::cli
