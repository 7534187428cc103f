// Where `udiag record` puts the record stream: into a trace file writer,
// counting per event for the summary. Pages (what a recording's stream
// brings) go to a trace.dat writer as they are, counted from what the daemon
// says of them (their event headers are read only on a page of several
// event types), or are only counted when the daemon writes them into the
// file itself; other writers get their records.
// Timestamps handed to the writer never
// go backwards (within a cpu, for the records of pages): a record committed
// late (its thread was preempted between taking the time and committing)
// is stamped with the previous time, and counted, so every format gets the
// order it needs.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "consumer/record_stream.h"
#include "record/trace_model.h"
#include "record/tracedat/page_decoder.h"

namespace udiag::cli {

class RecordingSink : public consumer::RecordSink {
 public:
  explicit RecordingSink(record::TraceWriter* writer) : writer_(writer) {}

  void OnEventType(const record::EventType& type) override;
  void OnTask(const record::Task& task) override;
  void OnRecord(const record::Record& record) override;
  void OnLost(uint64_t count) override;
  bool OnPage(uint16_t cpu, std::span<const uint8_t> page, const consumer::PageCounts& counts) override;
  bool OnFilePage(uint16_t cpu, std::span<const uint8_t> page, const consumer::PageCounts& counts) override;
  bool OnPagesOnDisk(uint16_t cpu, uint64_t bytes) override;
  bool OnFileError(int error) override;
  bool OnFileSynced() override;

  uint64_t events() const { return events_; }
  uint64_t bytes() const { return bytes_; }
  uint64_t lost() const { return lost_; }
  uint64_t restamped() const { return restamped_; }
  // Losses after the last record, for TraceInfo::lost_at_end.
  uint64_t trailing_lost() const { return pending_lost_; }
  uint32_t cpus() const { return max_cpu_ + 1; }
  // The daemon writes the pages: every page counted is on disk, tracing
  // having stopped (no page has come since it said so).
  bool file_synced() const { return file_synced_; }
  // Of the events counted, those in pages the daemon had yet to write (it
  // died, or its disk stalled past the end): not in the file, so taken out
  // of the counts of events, bytes and each event and counted lost instead.
  // Returns how many. Once the stream has ended.
  uint64_t CountUnwrittenAsLost();

  // "  <system>:<name>  <count>" lines, in order of first appearance, and a
  // line for the losses (which cannot be told apart by event).
  std::string Summary() const;

 private:
  void Take(const record::Record& record, uint64_t* last);
  bool TakeRecordsOf(uint16_t cpu, std::span<const uint8_t> page, const consumer::PageCounts& counts);
  // An event id and how many of a page's events it has.
  using TypeCount = std::pair<uint16_t, uint32_t>;
  // Adds a page's records to their events' counts, reading each event
  // header; and appends those counts to `*by_type` when not null.
  bool CountByType(std::span<const uint8_t> page, std::vector<TypeCount>* by_type);
  // Counts a page's events and losses (what the daemon said of it); a page
  // of several types is counted by type into `*by_type` too, when not null.
  bool CountPage(uint16_t cpu, std::span<const uint8_t> page, const consumer::PageCounts& counts,
                 std::vector<TypeCount>* by_type = nullptr);

  struct Counted {
    std::string name;
    uint64_t count = 0;
  };
  record::TraceWriter* writer_;
  std::vector<uint32_t> order_;       // event ids in order of first appearance
  std::vector<Counted> by_id_;         // indexed by event id
  uint64_t events_ = 0, bytes_ = 0, lost_ = 0, restamped_ = 0, pending_lost_ = 0;
  uint64_t last_timestamp_ = 0;
  uint16_t max_cpu_ = 0;
  bool file_synced_ = false;
  // What a page counted and not yet reported on disk added to the counts.
  struct UnwrittenPage {
    uint32_t events = 0;
    uint32_t data_bytes = 0;
    uint32_t only_type = 0;          // its events' id, or 0: by_type says
    std::vector<TypeCount> by_type;  // a page of several types
  };
  // By cpu: the pages counted and not yet reported on disk, oldest first,
  // and the pages reported on disk.
  struct Unwritten {
    std::deque<UnwrittenPage> pages;
    uint64_t pages_on_disk = 0;
  };
  std::vector<Unwritten> unwritten_;
  // For the records of pages a writer does not keep (TakeRecordsOf).
  std::unordered_map<uint32_t, uint32_t> pid_of_tid_;
  std::vector<uint64_t> last_timestamp_of_cpu_;
};

}  // namespace udiag::cli
