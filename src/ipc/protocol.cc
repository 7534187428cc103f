#include "ipc/protocol.h"

namespace udiag::ipc {

Encoder StartMessage(MsgType type, uint32_t seq, int32_t error) {
  Encoder e;
  e.Put(type).Put(seq).Put(error).Put<uint32_t>(0);
  return e;
}

bool SplitMessage(const std::vector<uint8_t>& bytes, MessageHeader* header, Decoder* body) {
  if (bytes.size() < sizeof(MessageHeader)) return false;
  std::memcpy(header, bytes.data(), sizeof(MessageHeader));
  *body = Decoder(std::span<const uint8_t>(bytes).subspan(sizeof(MessageHeader)));
  return true;
}

void Hello::Encode(Encoder& e) const { e.Put(version).Put(role).Put(forked_from).Put(ring_version); }
bool Hello::Decode(Decoder& d) {
  version = d.Get<uint32_t>();
  role = d.Get<Role>();
  forked_from = d.Get<int32_t>();
  ring_version = d.Rest().size() >= sizeof(uint32_t) ? d.Get<uint32_t>() : 0;
  return d.ok();
}

void HelloReply::Encode(Encoder& e) const {
  e.Put(first_event_id).Put(status_page_bytes).Put(clock).Put(ring_bytes).Put(ring_max_bytes);
}
bool HelloReply::Decode(Decoder& d) {
  first_event_id = d.Get<uint32_t>();
  status_page_bytes = d.Get<uint32_t>();
  clock = d.Get<uint32_t>();
  ring_bytes = d.Get<uint32_t>();
  ring_max_bytes = d.Rest().size() >= sizeof(uint32_t) ? d.Get<uint32_t>() : ring_bytes;
  return d.ok();
}

void EventInfo::Encode(Encoder& e) const {
  e.Put(id).Put(min_size).Put<uint32_t>(locs.size());
  for (const auto& loc : locs) e.Put(loc.offset).Put(loc.relative).Put(loc.is_string);
}
bool EventInfo::Decode(Decoder& d) {
  id = d.Get<uint32_t>();
  min_size = d.Get<uint32_t>();
  uint32_t n = d.Get<uint32_t>();
  if (!d.ok() || n > 4096) return false;
  locs.resize(n);
  for (auto& loc : locs) {
    loc.offset = d.Get<uint16_t>();
    loc.relative = d.Get<uint8_t>();
    loc.is_string = d.Get<uint8_t>();
  }
  return d.ok();
}

void RegisterRequest::Encode(Encoder& e) const {
  e.Put(flags).Put(enable_addr).Put(enable_bit).Put(enable_size).PutBytes(command);
}
bool RegisterRequest::Decode(Decoder& d) {
  flags = d.Get<uint16_t>();
  enable_addr = d.Get<uint64_t>();
  enable_bit = d.Get<uint8_t>();
  enable_size = d.Get<uint8_t>();
  command = d.GetBytes();
  return d.ok();
}

void RegisterReply::Encode(Encoder& e) const {
  e.Put(write_index).Put(status);
  event.Encode(e);
}
bool RegisterReply::Decode(Decoder& d) {
  write_index = d.Get<uint32_t>();
  status = d.Get<uint8_t>();
  return event.Decode(d);
}

void UnregisterRequest::Encode(Encoder& e) const { e.Put(addr).Put(bit); }
bool UnregisterRequest::Decode(Decoder& d) {
  addr = d.Get<uint64_t>();
  bit = d.Get<uint8_t>();
  return d.ok();
}

void PerfAttachRequest::Encode(Encoder& e) const { e.Put(event_id); }
bool PerfAttachRequest::Decode(Decoder& d) {
  event_id = d.Get<uint32_t>();
  return d.ok();
}

void NameRequest::Encode(Encoder& e) const { e.PutBytes(name); }
bool NameRequest::Decode(Decoder& d) {
  name = d.GetBytes();
  return d.ok();
}

void DescribeIndexRequest::Encode(Encoder& e) const { e.Put(index); }
bool DescribeIndexRequest::Decode(Decoder& d) {
  index = d.Get<uint32_t>();
  return d.ok();
}

void InheritRequest::Encode(Encoder& e) const {
  e.Put<uint32_t>(enablers.size());
  for (const auto& en : enablers) e.Put(en.event_id).Put(en.addr).Put(en.bit).Put(en.size);
}
bool InheritRequest::Decode(Decoder& d) {
  uint32_t n = d.Get<uint32_t>();
  if (!d.ok() || n > 65536) return false;
  enablers.resize(n);
  for (auto& en : enablers) {
    en.event_id = d.Get<uint32_t>();
    en.addr = d.Get<uint64_t>();
    en.bit = d.Get<uint8_t>();
    en.size = d.Get<uint8_t>();
  }
  return d.ok();
}

void InheritReply::Encode(Encoder& e) const {
  e.PutBytes(std::string_view(reinterpret_cast<const char*>(statuses.data()), statuses.size()));
}
bool InheritReply::Decode(Decoder& d) {
  std::string s = d.GetBytes();
  statuses.assign(s.begin(), s.end());
  return d.ok();
}

void SetStatus::Encode(Encoder& e) const { e.Put(notice).Put(event_id).Put(status); }
bool SetStatus::Decode(Decoder& d) {
  notice = d.Get<uint64_t>();
  event_id = d.Get<uint32_t>();
  status = d.Get<uint8_t>();
  return d.ok();
}

void Ack::Encode(Encoder& e) const { e.Put(notice); }
bool Ack::Decode(Decoder& d) {
  notice = d.Get<uint64_t>();
  return d.ok();
}

void PathRequest::Encode(Encoder& e) const { e.PutBytes(path); }
bool PathRequest::Decode(Decoder& d) {
  path = d.GetBytes();
  return d.ok();
}

void RecordStreamRequest::Encode(Encoder& e) const {
  e.PutBytes(instance).Put<uint8_t>(pages).Put(file_region_bytes).Put(file_cpus);
}
bool RecordStreamRequest::Decode(Decoder& d) {
  instance = d.GetBytes();
  pages = !d.Rest().empty() && d.Get<uint8_t>() != 0;
  if (!d.Rest().empty()) {
    file_region_bytes = d.Get<uint64_t>();
    file_cpus = d.Get<uint32_t>();
  }
  return d.ok();
}

void RecordStreamReply::Encode(Encoder& e) const { e.Put<uint8_t>(writes_file); }
bool RecordStreamReply::Decode(Decoder& d) {
  writes_file = !d.Rest().empty() && d.Get<uint8_t>() != 0;  // an older daemon's reply is empty
  return d.ok();
}

void AutoEnableRequest::Encode(Encoder& e) const {
  e.PutBytes(glob).PutBytes(instance).PutBytes(filter).PutBytes(trigger);
}
bool AutoEnableRequest::Decode(Decoder& d) {
  glob = d.GetBytes();
  instance = d.Rest().empty() ? std::string() : d.GetBytes();
  filter = d.Rest().empty() ? std::string() : d.GetBytes();
  trigger = d.Rest().empty() ? std::string() : d.GetBytes();
  return d.ok();
}

void MkdirRequest::Encode(Encoder& e) const { e.PutBytes(path).Put<uint8_t>(owned); }
bool MkdirRequest::Decode(Decoder& d) {
  path = d.GetBytes();
  owned = d.Get<uint8_t>() != 0;
  return d.ok();
}

void TreeWriteRequest::Encode(Encoder& e) const {
  e.PutBytes(path).Put<uint8_t>(append).PutBytes(text);
}
bool TreeWriteRequest::Decode(Decoder& d) {
  path = d.GetBytes();
  append = d.Get<uint8_t>() != 0;
  text = d.GetBytes();
  return d.ok();
}

void TreeListReply::Encode(Encoder& e) const {
  e.Put<uint32_t>(entries.size());
  for (const auto& [name, dir] : entries) e.PutBytes(name).Put<uint8_t>(dir);
}
bool TreeListReply::Decode(Decoder& d) {
  uint32_t n = d.Get<uint32_t>();
  if (!d.ok() || n > 1'000'000) return false;
  entries.clear();
  for (uint32_t i = 0; i < n && d.ok(); ++i) {
    std::string name = d.GetBytes();
    bool dir = d.Get<uint8_t>() != 0;
    entries.emplace_back(std::move(name), dir);
  }
  return d.ok();
}

}  // namespace udiag::ipc
