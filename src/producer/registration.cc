#include "producer/registration.h"

#include "producer/data_files.h"
#include "producer/user_memory.h"

namespace udiag::producer {
namespace {

EventSlot SlotFrom(const ipc::EventInfo& info) { return EventSlot{info.id, info.min_size, info.locs}; }

// Returns the write index the program gets (data_files.h: LocalIndexFor).
uint32_t Remember(int fd, uint32_t daemon_index, const ipc::EventInfo& info) {
  std::lock_guard lock(DataFiles().mutex());
  return DataFiles().FindOrAdd(fd, g_fast.epoch.load())->LocalIndexFor(daemon_index, SlotFrom(info));
}

}  // namespace

int RegisterEnabler(Client& client, int fd, uint16_t flags, const std::string& command, const LocalEnabler& enabler,
                    Registration* out) {
  ipc::RegisterRequest req{flags, enabler.addr, enabler.bit, enabler.size, command};
  ipc::Encoder body;
  req.Encode(body);
  Reply reply;
  ipc::RegisterReply answer;
  int fds[] = {fd};
  int err = client.Call(ipc::MsgType::kRegister, &body, fds, &reply, [&](const Reply& r) {
    ipc::Decoder d(r.body);
    if (r.error || !answer.Decode(d)) return;
    answer.write_index = Remember(fd, answer.write_index, answer.event);
    LocalEnabler added = enabler;
    added.event_id = answer.event.id;
    added.fd = fd;
    added.write_index = answer.write_index;
    added.flags = flags;
    added.command = command;
    client.AddEnabler(added, answer.status);
  });
  if (err) return err;
  if (reply.error) return reply.error;
  *out = Registration{answer.write_index, answer.event.id};
  return 0;
}

int UnregisterEnabler(Client& client, uint64_t addr, uint8_t bit) {
  ipc::Encoder body;
  ipc::UnregisterRequest{addr, bit}.Encode(body);
  Reply reply;
  uint8_t size = 0;
  int err = client.Call(ipc::MsgType::kUnregister, &body, {}, &reply, [&](const Reply& r) {
    if (!r.error) size = client.RemoveEnablers(addr, bit);
  });
  if (err || reply.error) return err ? err : reply.error;
  // The kernel clears the bit on the way out, whatever the event's state.
  if (!IsWritable(addr, size)) return EFAULT;
  WriteEnableBit({0, addr, bit, size}, false);
  return 0;
}

int DeleteEvent(Client& client, const std::string& name) {
  ipc::NameRequest req{name};
  ipc::Encoder body;
  req.Encode(body);
  Reply reply;
  if (int err = client.Call(ipc::MsgType::kDelete, &body, {}, &reply)) return err;
  return reply.error;
}

}  // namespace udiag::producer
