#include "schema/loc_check.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string_view>
#include <vector>

namespace udiag::schema {
namespace {

uint32_t DynLoc(uint32_t offset, uint32_t size) { return size << 16 | offset; }

// A record with one loc word right after the common header, followed by `data`.
std::vector<uint8_t> RecordWithLoc(uint32_t loc, std::string_view data) {
  std::vector<uint8_t> record(8 + sizeof(loc) + data.size(), 0x11);
  std::memcpy(record.data() + 8, &loc, sizeof(loc));
  std::memcpy(record.data() + 8 + sizeof(loc), data.data(), data.size());
  return record;
}

bool Valid(LocCheck check, const std::vector<uint8_t>& record) {
  return LocsValid(&check, 1, record.data(), static_cast<uint32_t>(record.size()));
}

constexpr LocCheck kRelString{.offset = 8, .relative = 1, .is_string = 1};
constexpr LocCheck kDataString{.offset = 8, .relative = 0, .is_string = 1};
constexpr std::string_view kTest("Test\0", 5);

// §9.3 selftest vectors (ftrace_test write_validator).
TEST(LocCheckTest, SelftestInBounds) {
  EXPECT_TRUE(Valid(kRelString, RecordWithLoc(DynLoc(0, 5), kTest)));
}

TEST(LocCheckTest, SelftestOutOfBounds) {
  EXPECT_FALSE(Valid(kRelString, RecordWithLoc(DynLoc(1024, 5), kTest)));
  EXPECT_FALSE(Valid(kRelString, RecordWithLoc(DynLoc(1, 5), kTest)));
  EXPECT_FALSE(Valid(kRelString, RecordWithLoc(DynLoc(0, 1029), kTest)));
  EXPECT_FALSE(Valid(kRelString, RecordWithLoc(DynLoc(0, 6), kTest)));
}

TEST(LocCheckTest, SelftestMissingNul) {
  EXPECT_FALSE(Valid(kRelString, RecordWithLoc(DynLoc(0, 5), "AAAAA")));
}

TEST(LocCheckTest, DataLocIsRelativeToTheRecord) {
  EXPECT_TRUE(Valid(kDataString, RecordWithLoc(DynLoc(12, 5), kTest)));
  EXPECT_FALSE(Valid(kDataString, RecordWithLoc(DynLoc(0, 5), kTest)));  // header has no NUL at 4
  EXPECT_FALSE(Valid(kDataString, RecordWithLoc(DynLoc(13, 5), kTest)));
}

TEST(LocCheckTest, NonStringsOnlyNeedBounds) {
  constexpr LocCheck kRelBytes{.offset = 8, .relative = 1, .is_string = 0};
  EXPECT_TRUE(Valid(kRelBytes, RecordWithLoc(DynLoc(0, 5), "AAAAA")));
  EXPECT_TRUE(Valid(kRelBytes, RecordWithLoc(DynLoc(5, 0), "AAAAA")));
  EXPECT_FALSE(Valid(kRelBytes, RecordWithLoc(DynLoc(0, 6), "AAAAA")));
}

TEST(LocCheckTest, ZeroLengthStringInspectsTheByteBefore) {
  // Kernel quirk: the "last byte" of an empty string is the one before it.
  EXPECT_TRUE(Valid(kRelString, RecordWithLoc(DynLoc(5, 0), kTest)));
  EXPECT_FALSE(Valid(kRelString, RecordWithLoc(DynLoc(4, 0), kTest)));
  // At the very start of the record there is no byte before: rejected.
  EXPECT_FALSE(Valid(kDataString, RecordWithLoc(DynLoc(0, 0), kTest)));
}

TEST(LocCheckTest, EveryLocIsChecked) {
  // Two rel locs: "ab\0" for the first, "Test\0" for the second.
  std::vector<uint8_t> record(16, 0x11);
  uint32_t first = DynLoc(4, 3), second = DynLoc(3, 5);
  std::memcpy(record.data() + 8, &first, 4);
  std::memcpy(record.data() + 12, &second, 4);
  for (char c : std::string_view("ab\0Test\0", 8)) record.push_back(static_cast<uint8_t>(c));
  const LocCheck checks[] = {{8, 1, 1}, {12, 1, 1}};
  EXPECT_TRUE(LocsValid(checks, 2, record.data(), static_cast<uint32_t>(record.size())));
  record.back() = 'x';
  EXPECT_FALSE(LocsValid(checks, 2, record.data(), static_cast<uint32_t>(record.size())));
  EXPECT_TRUE(LocsValid(checks, 1, record.data(), static_cast<uint32_t>(record.size())));
  EXPECT_TRUE(LocsValid(checks, 0, record.data(), 0));
}

}  // namespace
}  // namespace udiag::schema
