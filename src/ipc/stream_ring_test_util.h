// A stream ring and the reader's mapping of it, for the ring's tests.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>

#include "ipc/stream_ring.h"

namespace udiag::ipc::testing_util {

inline constexpr uint64_t kSize = StreamRing::kMinDataBytes;

struct Pair {
  std::unique_ptr<StreamRing> writer, reader;
};

inline Pair MakePair() {
  auto writer = StreamRing::Create(kSize);
  EXPECT_TRUE(writer.ok()) << writer.error();
  auto reader = StreamRing::Map(base::ScopedFd(dup((*writer)->fd())));
  EXPECT_TRUE(reader.ok()) << reader.error();
  return {std::move(writer).value(), std::move(reader).value()};
}

}  // namespace udiag::ipc::testing_util
