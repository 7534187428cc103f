// Fuzzes the control protocol decoder: one SOCK_SEQPACKET message from an
// untrusted peer, split and decoded as the daemon and the clients do.
//
// Input: the message bytes (16-byte header, then the body).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ipc/protocol.h"

using namespace udiag::ipc;

namespace {

template <typename Message>
void DecodeAs(const Decoder& body) {
  Decoder d = body;
  Message message;
  if (message.Decode(d)) {
    Encoder e;
    message.Encode(e);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> bytes(data, data + size);
  MessageHeader header;
  Decoder body(std::span<const uint8_t>{});
  if (!SplitMessage(bytes, &header, &body)) return 0;
  // Every body type, whatever the header says: a peer may lie about it.
  DecodeAs<Hello>(body);
  DecodeAs<HelloReply>(body);
  DecodeAs<EventInfo>(body);
  DecodeAs<RegisterRequest>(body);
  DecodeAs<RegisterReply>(body);
  DecodeAs<UnregisterRequest>(body);
  DecodeAs<NameRequest>(body);
  DecodeAs<DescribeIndexRequest>(body);
  DecodeAs<InheritRequest>(body);
  DecodeAs<InheritReply>(body);
  DecodeAs<SetStatus>(body);
  DecodeAs<Ack>(body);
  DecodeAs<PathRequest>(body);
  DecodeAs<AutoEnableRequest>(body);
  DecodeAs<MkdirRequest>(body);
  DecodeAs<TreeWriteRequest>(body);
  DecodeAs<TreeListReply>(body);
  return 0;
}
