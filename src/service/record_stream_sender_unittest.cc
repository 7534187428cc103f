#include "service/record_stream_sender.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <thread>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "record/tracedat/page_decoder.h"
#include "record/tracedat/page_encoder.h"
#include "service/page_run.h"
#include "service/status_page.h"
#include "service/test_observer.h"

namespace udiag::service {
namespace {

// Frames read back from the stream, checked as a consumer would.
struct Decoded {
  int event_types = 0, tasks = 0, record_frames = 0, pages = 0;
  std::vector<uint64_t> seqs;  // first payload word of each record, in order
  std::vector<uint32_t> page_cpus;
  std::vector<uint32_t> page_types;  // each page frame's only_type
  std::vector<uint32_t> pool_slots;  // of the kPoolPage frames
  uint64_t lost = 0;
  // File mode: kFilePage frames by cpu (with the page when one came), the
  // last kFileProgress by cpu, kFileSynced frames, the kFileError errno.
  std::map<uint32_t, std::vector<std::vector<uint8_t>>> file_pages;
  uint64_t file_page_events = 0;
  std::map<uint32_t, uint64_t> on_disk;
  int synced = 0;
  int file_error = 0;
};

// A kPage frame's records, or a kPoolPage frame's (its page in `pool`),
// checked as trace-cmd would read the page.
void DecodePageFrame(const uint8_t* body, uint32_t bytes, const ipc::StreamRing* pool, Decoded* out) {
  ASSERT_EQ(bytes, pool ? sizeof(ipc::PageFrame) : ipc::kPageFrameBytes);
  ipc::PageFrame frame;
  std::memcpy(&frame, body, sizeof(frame));
  out->page_cpus.push_back(frame.cpu);
  ++out->pages;
  if (pool) {
    ASSERT_LT(frame.pool_slot, pool->pool_pages());
    out->pool_slots.push_back(frame.pool_slot);
  }
  const uint8_t* const at = pool ? pool->pool_page(frame.pool_slot) : body + sizeof(frame);
  record::tracedat::DecodedPage page;
  ASSERT_EQ(record::tracedat::DecodePage({at, ipc::kStreamPageSize}, 8, &page), 0);
  out->lost += page.lost_before;
  // The frame counts what the page holds, so that a recorder need not read it.
  EXPECT_EQ(frame.events, page.records.size());
  EXPECT_EQ(frame.lost_before, page.lost_before);
  uint64_t commit;
  std::memcpy(&commit, at + 8, sizeof(commit));
  EXPECT_EQ(frame.data_bytes, commit & record::tracedat::kCommitSizeMask) << "the commit word's byte count";
  uint32_t only_type = 0;
  for (size_t i = 0; i < page.records.size(); ++i) {
    uint16_t type;
    std::memcpy(&type, page.records[i].data.data(), sizeof(type));
    only_type = i == 0 || only_type == type ? type : 0;
  }
  EXPECT_EQ(frame.only_type, only_type);
  out->page_types.push_back(frame.only_type);
  for (const record::tracedat::PageRecord& r : page.records) {
    ASSERT_GE(r.data.size(), 8u + 32u);
    uint64_t seq;
    std::memcpy(&seq, r.data.data() + 8, sizeof(seq));
    out->seqs.push_back(seq);
  }
}

Decoded Decode(const std::vector<uint8_t>& stream, const ipc::StreamRing* pool = nullptr) {
  Decoded out;
  size_t at = 0;
  while (at < stream.size()) {
    ipc::FrameHeader frame;
    EXPECT_LE(at + sizeof(frame), stream.size());
    if (at + sizeof(frame) > stream.size()) break;
    std::memcpy(&frame, stream.data() + at, sizeof(frame));
    at += sizeof(frame);
    const size_t padded = ipc::PadTo8(frame.bytes);
    EXPECT_LE(at + padded, stream.size());
    if (at + padded > stream.size()) break;
    const uint8_t* body = stream.data() + at;
    for (size_t i = frame.bytes; i < padded; ++i) EXPECT_EQ(body[i], 0) << "padding";
    switch (frame.kind) {
      case ipc::FrameKind::kEventType: ++out.event_types; break;
      case ipc::FrameKind::kTask: ++out.tasks; break;
      case ipc::FrameKind::kLost: {
        uint64_t count;
        std::memcpy(&count, body, sizeof(count));
        out.lost += count;
        break;
      }
      case ipc::FrameKind::kPage:
        DecodePageFrame(body, frame.bytes, nullptr, &out);
        break;
      case ipc::FrameKind::kPoolPage:
        EXPECT_NE(pool, nullptr) << "a pool page in a stream without a pool";
        if (!pool) return out;
        DecodePageFrame(body, frame.bytes, pool, &out);
        break;
      case ipc::FrameKind::kFilePage: {
        ipc::PageFrame page;
        EXPECT_GE(frame.bytes, sizeof(page));
        std::memcpy(&page, body, sizeof(page));
        EXPECT_EQ(frame.bytes, sizeof(page) + (page.only_type == 0 ? ipc::kStreamPageSize : 0))
            << "the page comes along only when its events are of several types";
        out.file_pages[page.cpu].emplace_back(body + sizeof(page), body + frame.bytes);
        out.file_page_events += page.events;
        out.lost += page.lost_before;
        ++out.pages;
        break;
      }
      case ipc::FrameKind::kFileProgress: {
        ipc::FileProgress progress;
        std::memcpy(&progress, body, sizeof(progress));
        EXPECT_GE(progress.bytes, out.on_disk[progress.cpu]) << "on disk only grows";
        out.on_disk[progress.cpu] = progress.bytes;
        break;
      }
      case ipc::FrameKind::kFileSynced: ++out.synced; break;
      case ipc::FrameKind::kFileError: {
        ipc::FileError error;
        std::memcpy(&error, body, sizeof(error));
        out.file_error = error.error;
        break;
      }
      case ipc::FrameKind::kRecords:
        ++out.record_frames;
        for (size_t off = 0; off < frame.bytes;) {
          ipc::RecordEntry entry;
          std::memcpy(&entry, body + off, sizeof(entry));
          EXPECT_EQ(entry.record_size, 8u + 32u);
          uint64_t seq;
          std::memcpy(&seq, body + off + sizeof(entry) + 8, sizeof(seq));
          out.seqs.push_back(seq);
          EXPECT_GT(entry.size, 0u);
          if (entry.size == 0) return out;
          off += entry.size;
        }
        break;
      default:
        ADD_FAILURE() << "unknown frame kind " << static_cast<uint32_t>(frame.kind);
        return out;
    }
    at += padded;
  }
  return out;
}

// Seqs 0..count-1 of one event from one thread, in order, nothing lost.
void ExpectOneThreadsRecordsInOrder(const Decoded& d, uint64_t count) {
  EXPECT_EQ(d.event_types, 1);
  EXPECT_EQ(d.tasks, 1);
  EXPECT_EQ(d.lost, 0u);
  ASSERT_EQ(d.seqs.size(), count);
  for (uint64_t i = 0; i < count; ++i) ASSERT_EQ(d.seqs[i], i);
}

class SenderFixture : public ::testing::Test {
 protected:
  static constexpr uint64_t kRegionBytes = uint64_t{1} << 32;

  // `pages`: page mode (ftrace pages) instead of record frames; `to_file`:
  // the pages go into a file of two cpu regions of kRegionBytes.
  explicit SenderFixture(bool pages, uint64_t pool_pages = 0, bool to_file = false)
      : pages_(pages), page_(std::move(StatusPage::Create(EventRegistry::kFirstId, 64)).value()), registry_(&page_, &observer_) {
    event_ = registry_.FindOrCreate("bench u64 seq; u64 b; u64 c; u64 d", false, false).value();
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
    reader_.Reset(fds[1]);
    // The smallest ring, so that it fills often.
    auto ring = ipc::StreamRing::Create(ipc::StreamRing::kMinDataBytes, pool_pages);
    EXPECT_TRUE(ring.ok());
    ring_ = std::move(ipc::StreamRing::Map(base::ScopedFd(dup((*ring)->fd())))).value();
    std::unique_ptr<PageFileWriter> file_writer;
    if (to_file) {
      std::string name = ::testing::TempDir() + "/sender_file_XXXXXX";
      file_.Reset(::mkstemp(name.data()));
      ::unlink(name.c_str());
      wake_.Reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
      file_writer = std::move(PageFileWriter::Open(base::ScopedFd(::dup(file_.get())), kRegionBytes, 2, wake_.get())).value();
    }
    sender_.emplace(base::ScopedFd(fds[0]), std::move(ring).value(), &instance_, &registry_,
                    [](uint32_t) { return std::string("t"); }, pages, std::move(file_writer));
    instance_.buffer().set_capacity(16 << 20);  // room for the largest test's records
  }

  bool pages() const { return pages_; }
  // Pages take about half the bytes of record frames (44 bytes a record, not 80).
  uint64_t records_per_ring_fill() const { return pages_ ? 2 : 1; }

  void AppendRecords(uint64_t first_seq, uint64_t count, uint16_t cpu = 0) {
    for (uint64_t seq = first_seq; seq < first_seq + count; ++seq) {
      auto record = Record(seq);
      ASSERT_TRUE(instance_.buffer().Append({seq, 1, 2, cpu}, record));
    }
  }

  // As the drain loop keeps records that passed the filters: handed to the
  // instance's taker, or into its buffer.
  void KeepRecords(uint64_t first_seq, uint64_t count) {
    for (uint64_t seq = first_seq; seq < first_seq + count; ++seq) {
      auto record = Record(seq);
      instance_.Keep(*event_, {seq, 1, 2, 0}, record);
    }
  }

  std::array<uint8_t, 8 + 32> Record(uint64_t seq) const {
    std::array<uint8_t, 8 + 32> record{};
    const auto type = static_cast<uint16_t>(event_->id);
    std::memcpy(record.data(), &type, sizeof(type));
    std::memcpy(record.data() + 8, &seq, sizeof(seq));
    return record;
  }

  // Ends the recording as `udiag record` does (tracing off), so that page
  // mode sends its partly filled pages, and reads everything.
  void EndAndReadAll() {
    instance_.set_tracing_on(false);
    for (int i = 0; i < 100000 && sender_->Pump() != 0; ++i) ReadAvailable();
    ReadAvailable();
  }

  // Reads what the ring holds now, as the recorder would. True when the
  // sender asked to be poked.
  bool ReadAvailable() {
    std::span<const uint8_t> bytes = ring_->Readable();
    received_.insert(received_.end(), bytes.begin(), bytes.end());
    return ring_->Release(bytes.size());
  }

  // File mode: ends tracing and reads until the sender says every page is
  // on disk (10 s at most). Returns all that was read since the start.
  Decoded EndAndReadUntilSynced() {
    const int before = Decode(received_).synced;
    instance_.set_tracing_on(false);
    Decoded d;
    d.synced = before;
    for (int i = 0; i < 10000 && d.synced == before; ++i) {
      sender_->Pump();
      ReadAvailable();
      d = Decode(received_);
      if (d.synced == before) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(d.synced, before + 1);
    return d;
  }

  // File mode: the seqs of `cpu`'s pages on disk, in file order.
  std::vector<uint64_t> SeqsInFile(uint32_t cpu, uint64_t bytes) {
    std::vector<uint64_t> seqs;
    std::vector<uint8_t> page(ipc::kStreamPageSize);
    for (uint64_t at = 0; at < bytes; at += page.size()) {
      EXPECT_EQ(::pread(file_.get(), page.data(), page.size(), static_cast<off_t>((cpu + 1) * kRegionBytes + at)),
                static_cast<ssize_t>(page.size()));
      record::tracedat::DecodedPage decoded;
      EXPECT_EQ(record::tracedat::DecodePage(page, 8, &decoded), 0);
      for (const record::tracedat::PageRecord& r : decoded.records) {
        uint64_t seq;
        std::memcpy(&seq, r.data.data() + 8, sizeof(seq));
        seqs.push_back(seq);
      }
    }
    return seqs;
  }

  const bool pages_;
  base::ScopedFd file_;  // file mode: the recorder's file
  // A page of `count` records from seq `first`, built in `at` as the drain
  // loop leaves a producer's page it checked there.
  CheckedPage PageOf(uint8_t* at, uint64_t first, uint64_t count) {
    record::tracedat::PageEncoder encoder;
    for (uint64_t seq = first; seq < first + count; ++seq) EXPECT_TRUE(encoder.Append(seq, Record(seq)));
    encoder.FinishInto(at);
    CheckedPage page;
    page.page = at;
    uint64_t commit;
    std::memcpy(&commit, at + 8, sizeof(commit));
    page.data_bytes = static_cast<uint32_t>(commit);
    page.events = static_cast<uint32_t>(count);
    page.only_type = event_->id;
    page.type_count = 1;
    page.types[0] = static_cast<uint16_t>(event_->id);
    return page;
  }

  base::ScopedFd wake_;
  StatusPage page_;
  RecordingObserver observer_;
  EventRegistry registry_;
  Event* event_ = nullptr;
  Instance instance_{"rec"};
  base::ScopedFd reader_;
  std::unique_ptr<ipc::StreamRing> ring_;  // the reader's mapping
  std::optional<RecordStreamSender> sender_;
  std::vector<uint8_t> received_;
};

// Every test of the stream's mechanics runs in both modes.
class RecordStreamSenderTest : public SenderFixture, public ::testing::WithParamInterface<bool> {
 protected:
  RecordStreamSenderTest() : SenderFixture(GetParam()) {}
};

class PageStreamSenderTest : public SenderFixture {
 protected:
  PageStreamSenderTest() : SenderFixture(true) {}
};

// A stream with a pool of kPoolPages pages, as a trace.dat recording's.
class PoolPageSenderTest : public SenderFixture {
 protected:
  static constexpr uint64_t kPoolPages = 4;
  PoolPageSenderTest() : SenderFixture(true, kPoolPages) {}

};

TEST_P(RecordStreamSenderTest, AFullRingResumesMidFrame) {
  // 3.2 MB of record frames, 3.5 MB of pages: many chunks and frames, three rings full.
  const uint64_t kRecords = 40000 * records_per_ring_fill();
  AppendRecords(0, kRecords);
  int full = 0, pokes = 0;
  for (int i = 0; i < 100000; ++i) {
    int result = sender_->Pump();
    if (result == 0) break;
    ASSERT_EQ(result, EAGAIN);
    ++full;
    pokes += ReadAvailable();
  }
  ReadAvailable();
  EXPECT_GE(full, 3) << "the ring should have filled often";
  EXPECT_EQ(pokes, full) << "each time it was full, the sender asked to be poked";
  EXPECT_EQ(instance_.buffer().entries(), 0u);
  EndAndReadAll();
  Decoded d = Decode(received_);
  EXPECT_EQ(d.pages > 0, pages());
  ExpectOneThreadsRecordsInOrder(d, kRecords);
}

TEST_P(RecordStreamSenderTest, RecordsAppendedWhileTheRingIsFullFollowInOrder) {
  const uint64_t half = 20000 * records_per_ring_fill();
  AppendRecords(0, half);
  ASSERT_EQ(sender_->Pump(), EAGAIN);
  // The daemon keeps draining rings while the reader is slow.
  AppendRecords(half, half);
  instance_.buffer().NoteLost(3);
  EndAndReadAll();
  Decoded d = Decode(received_);
  EXPECT_EQ(d.lost, 3u);
  ASSERT_EQ(d.seqs.size(), 2 * half);
  for (uint64_t i = 0; i < d.seqs.size(); ++i) ASSERT_EQ(d.seqs[i], i);
}

TEST_P(RecordStreamSenderTest, AForgottenTypeIsSentAgainBeforeItsNextRecord) {
  AppendRecords(0, 10);
  ASSERT_EQ(sender_->Pump(), 0);
  sender_->ForgetType(event_->id);  // as when the id is reused for a new event
  AppendRecords(10, 10);
  ASSERT_EQ(sender_->Pump(), 0);
  EndAndReadAll();
  Decoded d = Decode(received_);
  EXPECT_EQ(d.event_types, 2);
  EXPECT_EQ(d.tasks, 1);
  EXPECT_EQ(d.seqs.size(), 20u);
}

TEST_P(RecordStreamSenderTest, ASleepingReaderIsPokedOnce) {
  ASSERT_FALSE(ring_->SleepUnlessReadable(1));
  AppendRecords(0, 100);
  ASSERT_EQ(sender_->Pump(), 0);
  AppendRecords(100, 100);
  ASSERT_EQ(sender_->Pump(), 0);
  char bytes[8];
  EXPECT_EQ(read(reader_.get(), bytes, sizeof(bytes)), 1);
}

TEST_P(RecordStreamSenderTest, ABrokenStreamIsReported) {
  // A reader gone while asleep: the poke fails.
  ASSERT_FALSE(ring_->SleepUnlessReadable(1));
  AppendRecords(0, 100);
  reader_.Reset();
  EXPECT_EQ(sender_->Pump(), EPIPE);
}

TEST_P(RecordStreamSenderTest, AReaderBreakingTheRingIsReported) {
  AppendRecords(0, 100);
  ASSERT_EQ(sender_->Pump(), 0);
  ReadAvailable();
  ring_->Release(8);  // more than was written
  AppendRecords(100, 100);
  EXPECT_EQ(sender_->Pump(), EPROTO);
}

TEST_P(RecordStreamSenderTest, WakeupsAreTakenUntilTheReaderHangsUp) {
  ASSERT_EQ(write(reader_.get(), "rr", 2), 2);
  EXPECT_TRUE(sender_->TakeWakeups());
  EXPECT_TRUE(sender_->TakeWakeups()) << "none waiting is fine";
  reader_.Reset();
  EXPECT_FALSE(sender_->TakeWakeups());
}

// Page mode: records wait in their cpu's page until it is full or the
// recording ends, and losses are marked on the page after them.
TEST_F(PageStreamSenderTest, APartlyFilledPageWaitsForTheEndOfTracing) {
  AppendRecords(0, 10);
  ASSERT_EQ(sender_->Pump(), 0);
  ReadAvailable();
  EXPECT_EQ(Decode(received_).pages, 0) << "ten records do not fill a page";
  instance_.buffer().NoteLost(5);
  AppendRecords(10, 10);
  ASSERT_EQ(sender_->Pump(), 0);
  EndAndReadAll();
  Decoded d = Decode(received_);
  EXPECT_EQ(d.pages, 2) << "the loss starts a page of its own";
  EXPECT_EQ(d.lost, 5u);
  ASSERT_EQ(d.seqs.size(), 20u);
  for (uint64_t i = 0; i < d.seqs.size(); ++i) EXPECT_EQ(d.seqs[i], i);
}

TEST_F(PageStreamSenderTest, APartlyFilledPageGoesOutOnceItHasWaited) {
  AppendRecords(0, 10);
  ASSERT_EQ(sender_->Pump(), 0);
  usleep(RecordStreamSender::kPageFlushNs / 1000 + 20'000);
  ASSERT_EQ(sender_->Pump(), 0);
  ReadAvailable();
  Decoded d = Decode(received_);
  EXPECT_EQ(d.pages, 1);
  EXPECT_EQ(d.seqs.size(), 10u);
}

TEST_F(PageStreamSenderTest, EachCpuHasItsPagesAndNoneBeyondTheMachine) {
  AppendRecords(0, 10, 0);
  AppendRecords(10, 10, 1);
  AppendRecords(20, 10, 60000);  // a hostile producer's cpu number
  EndAndReadAll();
  Decoded d = Decode(received_);
  EXPECT_EQ(d.seqs.size(), 30u);
  const auto cpus = static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_CONF));
  ASSERT_GE(d.page_cpus.size(), 2u);
  for (uint32_t cpu : d.page_cpus) EXPECT_LT(cpu, cpus);
}

TEST_F(PageStreamSenderTest, APageFrameNamesItsOneTypeOrNone) {
  Event* other = registry_.FindOrCreate("other u64 seq; u64 b; u64 c; u64 d", false, false).value();
  AppendRecords(0, 10);
  ASSERT_EQ(sender_->Pump(), 0);
  instance_.buffer().NoteLost(1);  // the next record starts a page
  AppendRecords(10, 10);
  auto record = Record(20);
  const auto type = static_cast<uint16_t>(other->id);
  std::memcpy(record.data(), &type, sizeof(type));
  ASSERT_TRUE(instance_.buffer().Append({20, 1, 2, 0}, record));
  EndAndReadAll();
  Decoded d = Decode(received_);
  EXPECT_EQ(d.page_types, (std::vector<uint32_t>{event_->id, 0}));
  EXPECT_EQ(d.seqs.size(), 21u);
}

// Page mode as the sole reader: the drain loop hands records over, and they
// go into pages with no stop in the buffer.
TEST_F(PageStreamSenderTest, HandedOverRecordsSkipTheBufferAndKeepTheirOrder) {
  instance_.set_taker(&*sender_);
  const uint64_t kRecords = 40000;
  for (uint64_t seq = 0; seq < kRecords; seq += 1000) {
    KeepRecords(seq, 1000);
    EXPECT_EQ(instance_.buffer().entries(), 0u);
    int result = sender_->Pump();
    ASSERT_TRUE(result == 0 || result == EAGAIN) << result;
    ReadAvailable();
  }
  EndAndReadAll();
  ExpectOneThreadsRecordsInOrder(Decode(received_), kRecords);
}

// The drain loop's common case: records built in their page, a run at a
// time (PageRun), among records that go through Keep and Take.
TEST_F(PageStreamSenderTest, RecordsBuiltInPlaceJoinTheTakenOnesInOrder) {
  Event* other = registry_.FindOrCreate("other u64 seq; u64 b; u64 c; u64 d", false, false).value();
  instance_.set_taker(&*sender_);
  ASSERT_TRUE(instance_.HandsOverDirectly(*event_));
  const uint64_t kRecords = 20000;
  uint64_t in_place = 0;
  PageRun run;
  for (uint64_t seq = 0; seq < kRecords; ++seq) {
    // Every 100th record is of another event, and every 300th from another cpu.
    Event* event = seq % 100 == 99 ? other : event_;
    const EntryMeta meta{seq, 1, 2, static_cast<uint16_t>(seq % 300 == 299 ? 1 : 0)};
    auto record = Record(seq);
    const auto type = static_cast<uint16_t>(event->id);
    std::memcpy(record.data(), &type, sizeof(type));
    if (uint8_t* at = run.Reserve(&instance_, *event, meta, record.size())) {
      std::memcpy(at, record.data(), record.size());
      run.Commit();
      ++in_place;
    } else {
      instance_.Keep(*event, meta, record);  // a cpu's first record, or a full page
    }
    if (seq % 1000 == 999) {
      run.End();
      int result = sender_->Pump();
      ASSERT_TRUE(result == 0 || result == EAGAIN) << result;
      ReadAvailable();
    }
  }
  run.End();
  EXPECT_GT(in_place, kRecords * 9 / 10);
  EndAndReadAll();
  Decoded d = Decode(received_);  // checks each page frame's counts against its page
  EXPECT_EQ(d.event_types, 2);
  EXPECT_EQ(d.lost, 0u);
  ASSERT_EQ(d.seqs.size(), kRecords);
  std::sort(d.seqs.begin(), d.seqs.end());  // two cpus' pages
  for (uint64_t i = 0; i < kRecords; ++i) ASSERT_EQ(d.seqs[i], i);
}

TEST_F(PageStreamSenderTest, NoRunStartsBeforeALossOrBehindTheBuffer) {
  instance_.set_taker(&*sender_);
  KeepRecords(0, 1);  // the cpu's page is started
  const EntryMeta meta{1, 1, 2, 0};
  PageRun run;
  EXPECT_NE(run.Reserve(&instance_, *event_, meta, 40), nullptr);
  run.End();
  instance_.buffer().NoteLost(3);
  EXPECT_EQ(run.Reserve(&instance_, *event_, meta, 40), nullptr) << "Take marks the loss first";
  KeepRecords(1, 1);
  EXPECT_NE(run.Reserve(&instance_, *event_, meta, 40), nullptr);
  run.End();
  auto record = Record(2);
  instance_.set_taker(nullptr);
  instance_.Keep(*event_, meta, record);
  instance_.set_taker(&*sender_);
  EXPECT_EQ(run.Reserve(&instance_, *event_, meta, 40), nullptr) << "the buffered record goes first";
}

TEST_F(PageStreamSenderTest, AnInstanceThatLooksAtRecordsDoesNotHandThemOverInPlace) {
  EXPECT_FALSE(instance_.HandsOverDirectly(*event_)) << "no taker";
  instance_.set_taker(&*sender_);
  EXPECT_TRUE(instance_.HandsOverDirectly(*event_));
  ASSERT_EQ(instance_.filters().Write(*event_, "seq > 3", &instance_.error_log()), 0);
  EXPECT_FALSE(instance_.HandsOverDirectly(*event_)) << "a filter";
  ASSERT_EQ(instance_.filters().Write(*event_, "0", &instance_.error_log()), 0);
  EXPECT_TRUE(instance_.HandsOverDirectly(*event_));
  instance_.set_tracing_on(false);
  EXPECT_FALSE(instance_.HandsOverDirectly(*event_)) << "tracing off";
}

TEST_F(PageStreamSenderTest, WhatTheBufferHoldsGoesBeforeHandedOverRecords) {
  AppendRecords(0, 100);  // kept while another reader shared the buffer, say
  instance_.set_taker(&*sender_);
  KeepRecords(100, 100);
  EXPECT_EQ(instance_.buffer().entries(), 200u) << "behind the buffered ones, into the buffer";
  ASSERT_EQ(sender_->Pump(), 0);
  KeepRecords(200, 100);
  EXPECT_EQ(instance_.buffer().entries(), 0u) << "the buffer is empty: handed over";
  EndAndReadAll();
  Decoded d = Decode(received_);
  ASSERT_EQ(d.seqs.size(), 300u);
  for (uint64_t i = 0; i < d.seqs.size(); ++i) ASSERT_EQ(d.seqs[i], i);
}

// --block: the drain asks how much fits (Instance::RoomFor) and takes no
// more, so nothing is dropped; the room shrinks as the stream fills. Records
// of 2 KiB, one a page, cost the stream about as much as a record can.
TEST_F(PageStreamSenderTest, WhatTheRoomSaysFitsIsTakenWithoutLoss) {
  instance_.buffer().set_capacity(256 << 10);
  instance_.set_blocking_timeout_ms(100);
  instance_.set_taker(&*sender_);
  constexpr size_t kRecordBytes = 8 + 2100;
  auto record_of = [&](uint64_t seq) {
    std::vector<uint8_t> record(kRecordBytes);
    const auto type = static_cast<uint16_t>(event_->id);
    std::memcpy(record.data(), &type, sizeof(type));
    std::memcpy(record.data() + 8, &seq, sizeof(seq));
    return record;
  };
  const size_t empty_room = instance_.RoomFor(kRecordBytes);
  ASSERT_GT(empty_room, 0u);
  uint64_t seq = 0;
  for (size_t room; (room = instance_.RoomFor(kRecordBytes)) > 0;) {
    ASSERT_LT(seq, 100000u) << "the room never ran out";
    // All the room says fits, as a drain round may take it.
    for (const uint64_t end = seq + room; seq < end; ++seq) {
      instance_.Keep(*event_, {seq, 1, 2, 0}, record_of(seq));
    }
    const int pumped = sender_->Pump();  // as the drain does after each round
    ASSERT_TRUE(pumped == 0 || pumped == EAGAIN) << pumped;
  }
  // The ring's 1 MiB and the buffer's 256 KiB, less what the room keeps back.
  EXPECT_GT(seq, (1u << 20) / ipc::kPageFrameBytes);
  ReadAvailable();
  ASSERT_EQ(sender_->Pump(), 0) << "the reader's poke";
  EXPECT_GT(instance_.RoomFor(kRecordBytes), 0u) << "reading frees room";
  EndAndReadAll();
  Decoded d = Decode(received_);
  EXPECT_EQ(d.lost, 0u);
  ASSERT_EQ(d.seqs.size(), seq);
  for (uint64_t i = 0; i < d.seqs.size(); ++i) ASSERT_EQ(d.seqs[i], i);
}

TEST_F(PageStreamSenderTest, ABacklogBeyondTheBufferSizeIsCountedAsLost) {
  instance_.buffer().set_capacity(256 << 10);
  instance_.set_taker(&*sender_);
  // The reader reads nothing: the ring fills, then the backlog.
  const uint64_t kRecords = 100000;
  int result = 0;
  for (uint64_t seq = 0; seq < kRecords; seq += 1000) {
    KeepRecords(seq, 1000);
    result = sender_->Pump();
  }
  EXPECT_EQ(result, EAGAIN);
  instance_.buffer().NoteLost(7);  // a producer's ring overflowed too
  KeepRecords(kRecords, 1);
  EndAndReadAll();
  Decoded d = Decode(received_);
  EXPECT_GT(d.lost, 7u) << "the backlog was bounded";
  EXPECT_EQ(d.seqs.size() + d.lost, kRecords + 1 + 7) << "every record is either kept or counted";
  for (uint64_t i = 1; i < d.seqs.size(); ++i) ASSERT_LT(d.seqs[i - 1], d.seqs[i]);
}

INSTANTIATE_TEST_SUITE_P(Modes, RecordStreamSenderTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "Pages" : "Records"; });

TEST_F(PoolPageSenderTest, APageCheckedInThePoolIsNamedNotCopied) {
  uint8_t* const lent = sender_->LendPage(0);
  ASSERT_NE(lent, nullptr);
  CheckedPage page = PageOf(lent, 0, 20);
  sender_->TakePage({0, 1, 2, 1}, page, 0);
  EndAndReadAll();
  Decoded d = Decode(received_, ring_.get());
  ExpectOneThreadsRecordsInOrder(d, 20);
  ASSERT_EQ(d.pool_slots.size(), 1u);
  // The reader's mapping of the same pool page.
  EXPECT_EQ(std::memcmp(ring_->pool_page(d.pool_slots[0]), lent, ipc::kStreamPageSize), 0);
  EXPECT_EQ(d.page_cpus, std::vector<uint32_t>{1});
  // A stream frame of 24 bytes, not a page, went through the ring.
  EXPECT_LT(received_.size(), ipc::kStreamPageSize);
}

TEST_F(PoolPageSenderTest, PoolPagesAreFreeAgainOnceTheReaderPassesTheirFrames) {
  std::vector<uint8_t*> lent;
  for (uint64_t i = 0; i < kPoolPages; ++i) {
    lent.push_back(sender_->LendPage(0));
    ASSERT_NE(lent.back(), nullptr);
    CheckedPage page = PageOf(lent.back(), i * 10, 10);
    sender_->TakePage({0, 1, 2, 0}, page, 0);
  }
  ASSERT_EQ(sender_->Pump(), 0);
  // All of the pool is named by frames the reader has not read.
  EXPECT_EQ(sender_->LendPage(0), nullptr);
  ReadAvailable();
  uint8_t* again = sender_->LendPage(0);
  ASSERT_NE(again, nullptr);
  EXPECT_NE(std::find(lent.begin(), lent.end(), again), lent.end());
  Decoded d = Decode(received_, ring_.get());
  ExpectOneThreadsRecordsInOrder(d, kPoolPages * 10);
}

TEST_F(PoolPageSenderTest, APageGivenBackIsLentAgainAndOtherMemoryIsIgnored) {
  uint8_t* const lent = sender_->LendPage(0);
  ASSERT_NE(lent, nullptr);
  sender_->GiveBackPage(lent);
  uint8_t outside[ipc::kStreamPageSize];
  sender_->GiveBackPage(outside);  // not the pool's: nothing happens
  for (uint64_t i = 0; i < kPoolPages; ++i) EXPECT_NE(sender_->LendPage(0), nullptr);
  EXPECT_EQ(sender_->LendPage(0), nullptr);
}

// A page the drain checked in its own memory still goes out copied.
TEST_F(PoolPageSenderTest, APageOutsideThePoolIsCopiedIntoTheStream) {
  std::vector<uint8_t> own(ipc::kStreamPageSize);
  CheckedPage page = PageOf(own.data(), 0, 5);
  sender_->TakePage({0, 1, 2, 0}, page, 0);
  EndAndReadAll();
  Decoded d = Decode(received_, ring_.get());
  ExpectOneThreadsRecordsInOrder(d, 5);
  EXPECT_TRUE(d.pool_slots.empty());
}

// A trace.dat recording whose daemon writes the pages into the recorder's
// file: the stream only counts them.
class FileSenderTest : public SenderFixture {
 protected:
  FileSenderTest() : SenderFixture(true, 0, /*to_file=*/true) {}
};

TEST_F(FileSenderTest, PagesGoIntoTheFileAndTheStreamCountsThem) {
  constexpr uint64_t kPerCpu = 100000;  // 92 a page: a full block of pages and a part
  AppendRecords(0, kPerCpu, 0);
  AppendRecords(kPerCpu, kPerCpu, 1);
  Decoded d = EndAndReadUntilSynced();
  EXPECT_EQ(d.event_types, 1);
  EXPECT_EQ(d.file_page_events, 2 * kPerCpu);
  EXPECT_EQ(d.lost, 0u);
  for (uint32_t cpu : {0u, 1u}) {
    ASSERT_EQ(d.on_disk[cpu], d.file_pages[cpu].size() * ipc::kStreamPageSize) << "every page counted is on disk";
    for (const auto& page : d.file_pages[cpu]) EXPECT_TRUE(page.empty()) << "pages of one type are only counted";
    std::vector<uint64_t> seqs = SeqsInFile(cpu, d.on_disk[cpu]);
    ASSERT_EQ(seqs.size(), kPerCpu);
    for (uint64_t i = 0; i < kPerCpu; ++i) ASSERT_EQ(seqs[i], cpu * kPerCpu + i);
  }
}

TEST_F(FileSenderTest, APageOfSeveralTypesComesWithItsPage) {
  const Event* other = registry_.FindOrCreate("other u64 seq; u64 b; u64 c; u64 d", false, false).value();
  for (uint64_t seq = 0; seq < 10; ++seq) {
    auto record = Record(seq);
    const auto type = static_cast<uint16_t>(seq % 2 ? other->id : event_->id);
    std::memcpy(record.data(), &type, sizeof(type));
    ASSERT_TRUE(instance_.buffer().Append({seq, 1, 2, 0}, record));
  }
  Decoded d = EndAndReadUntilSynced();
  EXPECT_EQ(d.event_types, 2);
  ASSERT_EQ(d.file_pages[0].size(), 1u);
  std::vector<uint8_t> on_disk(ipc::kStreamPageSize);
  ASSERT_EQ(::pread(file_.get(), on_disk.data(), on_disk.size(), static_cast<off_t>(kRegionBytes)),
            static_cast<ssize_t>(on_disk.size()));
  EXPECT_EQ(d.file_pages[0][0], on_disk) << "for the recorder to count it by type";
}

// A cpu's page of single records is built in a page the file lends, where
// it stays: no copy once full. A page lent for whole taking while it fills
// lies after it in memory, as in the file: one write segment, not two.
TEST_F(FileSenderTest, ThePageOfSingleRecordsIsBuiltInTheFilesPageAheadOfLaterOnes) {
  instance_.set_taker(&*sender_);
  uint8_t* const free_page = sender_->LendPage(0);
  ASSERT_NE(free_page, nullptr);
  sender_->GiveBackPage(free_page);
  KeepRecords(0, 3);  // built in the page given back, cut again
  uint8_t* const lent = sender_->LendPage(0);
  ASSERT_EQ(lent, free_page + ipc::kStreamPageSize) << "cut after the page of single records";
  CheckedPage page = PageOf(lent, 3, 5);
  sender_->TakePage({3, 1, 2, 0}, page, 0);
  Decoded d = EndAndReadUntilSynced();
  std::vector<uint64_t> seqs = SeqsInFile(0, d.on_disk[0]);
  ASSERT_EQ(seqs.size(), 8u);
  for (uint64_t i = 0; i < seqs.size(); ++i) EXPECT_EQ(seqs[i], i);
  std::vector<uint8_t> first(ipc::kStreamPageSize);
  ASSERT_EQ(::pread(file_.get(), first.data(), first.size(), static_cast<off_t>(kRegionBytes)),
            static_cast<ssize_t>(first.size()));
  EXPECT_EQ(std::memcmp(first.data(), free_page, first.size()), 0) << "written from where it was built";
}

TEST_F(FileSenderTest, AFailedWriteIsReportedAndLaterPagesCountAsLost) {
  // The file may not grow into cpu 0's region: its first write fails.
  ::signal(SIGXFSZ, SIG_IGN);
  rlimit old;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit limit = old;
  limit.rlim_cur = kRegionBytes;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  AppendRecords(0, 1000);
  Decoded d = EndAndReadUntilSynced();
  ::setrlimit(RLIMIT_FSIZE, &old);
  EXPECT_EQ(d.file_error, EFBIG);
  EXPECT_TRUE(d.on_disk.empty());
  EXPECT_EQ(d.file_page_events, 1000u) << "counted when queued, as a recorder counts what it was sent";
  // A later stretch of tracing: its pages cannot go anywhere.
  instance_.set_tracing_on(true);
  AppendRecords(1000, 1000);
  ASSERT_EQ(sender_->Pump(), 0);
  d = EndAndReadUntilSynced();
  EXPECT_EQ(d.file_page_events, 1000u);
  EXPECT_EQ(d.lost, 1000u);
  EXPECT_EQ(instance_.buffer().stats().dropped, 1000u) << "the instance's stats say where they went";
}

// While every page waits for the disk (lent, or queued for a write), the
// daemon leaves the producers' rings alone (Server::OnlyConsumerIsAFullRecorder).
// Pages queued short of a full write are submitted then, or the recording
// would wait for its flush timer: once they are on disk there is room again.
TEST_F(FileSenderTest, OutOfPagesWhileAllWaitForTheDiskUntilTheQueuedOnesAreWritten) {
  EXPECT_FALSE(sender_->FileOutOfPages());
  std::vector<uint8_t*> lent;
  while (uint8_t* page = sender_->LendPage(0)) lent.push_back(page);
  ASSERT_GT(lent.size(), 1000u);
  EXPECT_TRUE(sender_->FileOutOfPages());
  for (uint8_t* page : lent) sender_->GiveBackPage(page);
  EXPECT_FALSE(sender_->FileOutOfPages()) << "pages given back are free again";

  lent.clear();
  while (uint8_t* page = sender_->LendPage(0)) lent.push_back(page);
  constexpr uint64_t kQueued = 512;  // fewer than a write takes (PageFileWriter::kBlockPages)
  for (uint64_t i = 0; i < kQueued; ++i) {
    CheckedPage page = PageOf(lent[i], i * 10, 10);
    sender_->TakePage({i * 10, 1, 2, 0}, page, 0);
  }
  ASSERT_TRUE(sender_->FileOutOfPages());
  bool room = false;
  for (int i = 0; i < 10000 && !room; ++i) {
    room = !sender_->FileOutOfPages();
    if (!room) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(room) << "the queued pages were never written";
  for (size_t i = kQueued; i < lent.size(); ++i) sender_->GiveBackPage(lent[i]);
}

}  // namespace
}  // namespace udiag::service
