#include "service/record_stream_sender.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "service/status_page.h"
#include "service/test_observer.h"

namespace udiag::service {
namespace {

// Frames read back from the stream, checked as a consumer would.
struct Decoded {
  int event_types = 0, tasks = 0, record_frames = 0;
  std::vector<uint64_t> seqs;  // first payload word of each record, in order
  uint64_t lost = 0;
};

Decoded Decode(const std::vector<uint8_t>& stream) {
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

class RecordStreamSenderTest : public ::testing::Test {
 protected:
  RecordStreamSenderTest()
      : page_(std::move(StatusPage::Create(EventRegistry::kFirstId, 64)).value()), registry_(&page_, &observer_) {
    event_ = registry_.FindOrCreate("bench u64 seq; u64 b; u64 c; u64 d", false, false).value();
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
    reader_.Reset(fds[1]);
    // The smallest ring, so that it fills often.
    auto ring = ipc::StreamRing::Create(ipc::StreamRing::kMinDataBytes);
    EXPECT_TRUE(ring.ok());
    ring_ = std::move(ipc::StreamRing::Map(base::ScopedFd(dup((*ring)->fd())))).value();
    sender_.emplace(base::ScopedFd(fds[0]), std::move(ring).value(), &instance_, &registry_,
                    [](uint32_t) { return std::string("t"); });
  }

  void AppendRecords(uint64_t first_seq, uint64_t count) {
    for (uint64_t seq = first_seq; seq < first_seq + count; ++seq) {
      uint8_t record[8 + 32] = {};
      const auto type = static_cast<uint16_t>(event_->id);
      std::memcpy(record, &type, sizeof(type));
      std::memcpy(record + 8, &seq, sizeof(seq));
      ASSERT_TRUE(instance_.buffer().Append({seq, 1, 2, 0}, record));
    }
  }

  // Reads what the ring holds now, as the recorder would. True when the
  // sender asked to be poked.
  bool ReadAvailable() {
    std::span<const uint8_t> bytes = ring_->Readable();
    received_.insert(received_.end(), bytes.begin(), bytes.end());
    return ring_->Release(bytes.size());
  }

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

TEST_F(RecordStreamSenderTest, AFullRingResumesMidFrame) {
  constexpr uint64_t kRecords = 40000;  // 3.2 MB: many chunks and frames, three rings full
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
  Decoded d = Decode(received_);
  EXPECT_EQ(d.event_types, 1);
  EXPECT_EQ(d.tasks, 1);
  EXPECT_EQ(d.lost, 0u);
  ASSERT_EQ(d.seqs.size(), kRecords);
  for (uint64_t i = 0; i < kRecords; ++i) ASSERT_EQ(d.seqs[i], i);
}

TEST_F(RecordStreamSenderTest, RecordsAppendedWhileTheRingIsFullFollowInOrder) {
  AppendRecords(0, 20000);
  ASSERT_EQ(sender_->Pump(), EAGAIN);
  // The daemon keeps draining rings while the reader is slow.
  AppendRecords(20000, 20000);
  instance_.buffer().NoteLost(3);
  for (int i = 0; i < 100000 && sender_->Pump() != 0; ++i) ReadAvailable();
  ReadAvailable();
  Decoded d = Decode(received_);
  EXPECT_EQ(d.lost, 3u);
  ASSERT_EQ(d.seqs.size(), 40000u);
  for (uint64_t i = 0; i < d.seqs.size(); ++i) ASSERT_EQ(d.seqs[i], i);
}

TEST_F(RecordStreamSenderTest, AForgottenTypeIsSentAgainBeforeItsNextRecord) {
  AppendRecords(0, 10);
  ASSERT_EQ(sender_->Pump(), 0);
  sender_->ForgetType(event_->id);  // as when the id is reused for a new event
  AppendRecords(10, 10);
  ASSERT_EQ(sender_->Pump(), 0);
  ReadAvailable();
  Decoded d = Decode(received_);
  EXPECT_EQ(d.event_types, 2);
  EXPECT_EQ(d.tasks, 1);
  EXPECT_EQ(d.seqs.size(), 20u);
}

TEST_F(RecordStreamSenderTest, ASleepingReaderIsPokedOnce) {
  ASSERT_FALSE(ring_->SleepUnlessReadable(1));
  AppendRecords(0, 100);
  ASSERT_EQ(sender_->Pump(), 0);
  AppendRecords(100, 100);
  ASSERT_EQ(sender_->Pump(), 0);
  char bytes[8];
  EXPECT_EQ(read(reader_.get(), bytes, sizeof(bytes)), 1);
}

TEST_F(RecordStreamSenderTest, ABrokenStreamIsReported) {
  // A reader gone while asleep: the poke fails.
  ASSERT_FALSE(ring_->SleepUnlessReadable(1));
  AppendRecords(0, 100);
  reader_.Reset();
  EXPECT_EQ(sender_->Pump(), EPIPE);
}

TEST_F(RecordStreamSenderTest, AReaderBreakingTheRingIsReported) {
  AppendRecords(0, 100);
  ASSERT_EQ(sender_->Pump(), 0);
  ReadAvailable();
  ring_->Release(8);  // more than was written
  AppendRecords(100, 100);
  EXPECT_EQ(sender_->Pump(), EPROTO);
}

TEST_F(RecordStreamSenderTest, WakeupsAreTakenUntilTheReaderHangsUp) {
  ASSERT_EQ(write(reader_.get(), "rr", 2), 2);
  EXPECT_TRUE(sender_->TakeWakeups());
  EXPECT_TRUE(sender_->TakeWakeups()) << "none waiting is fine";
  reader_.Reset();
  EXPECT_FALSE(sender_->TakeWakeups());
}

}  // namespace
}  // namespace udiag::service
