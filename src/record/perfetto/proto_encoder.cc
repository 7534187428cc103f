#include "record/perfetto/proto_encoder.h"

#include <cstring>

namespace udiag::record::perfetto {

void ProtoMessage::RawVarint(uint64_t value) {
  char encoded[10];
  bytes_.append(encoded, PutVarint(encoded, value));
}

void ProtoMessage::Varint(uint32_t field, uint64_t value) {
  Key(field, 0);
  RawVarint(value);
}

void ProtoMessage::Fixed64(uint32_t field, uint64_t value) {
  Key(field, 1);
  for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<char>(value >> (8 * i)));
}

void ProtoMessage::Double(uint32_t field, double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  Fixed64(field, bits);
}

void ProtoMessage::Bytes(uint32_t field, std::string_view bytes) {
  Key(field, 2);
  RawVarint(bytes.size());
  bytes_.append(bytes);
}

}  // namespace udiag::record::perfetto
