// What one user's clients may make the daemon hold, counted per uid from the
// kernel-verified peer credentials. A user over a limit is refused (or, for
// replies he does not read, disconnected); other users are not affected.
// Privileged callers (root, the daemon's owner) are counted but never
// refused, as CAP_SYS_RESOURCE overrides the kernel's rlimits.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_map>

namespace udiag::service {

// udiagd's --max-*-per-user options (docs/cli.md); 0 is not "unlimited".
struct UserLimits {
  // Control connections plus user_events_data files: each holds a daemon fd.
  uint64_t fds = 512;
  // Replies queued for a client that does not read them, each message with
  // its bookkeeping (kQueuedMessageOverhead). Per connection applies to
  // everyone, root included; per user to unprivileged users.
  uint64_t queued_bytes_per_connection = 64 << 20;
  uint64_t queued_bytes = 128 << 20;
  // Events this user's registrations created that still exist.
  uint64_t events = 1024;
  // Registrations (enablers) of this user's processes: each costs daemon
  // memory and a scan at the next registration.
  uint64_t enablers = 16384;
  // Producer rings (shared memory the daemon maps) of this user's threads.
  uint64_t ring_bytes = uint64_t{2} << 30;
};

// What a queued message costs beyond its bytes: its vector in the outbox
// and the allocator's header, so a flood of tiny replies is counted too.
inline constexpr uint64_t kQueuedMessageOverhead = 64;

enum class Resource { kFds, kQueuedBytes, kEvents, kEnablers, kRingBytes };

class UserQuotas {
 public:
  explicit UserQuotas(const UserLimits& limits) : limits_(limits) {}

  // Charges `amount` of `r` to `uid` unless that would take an unprivileged
  // user over his limit; returns whether it was charged.
  bool TryCharge(uid_t uid, bool privileged, Resource r, uint64_t amount);
  // Charges whatever the total (queued replies: the caller then checks Over).
  void Charge(uid_t uid, Resource r, uint64_t amount);
  void Release(uid_t uid, Resource r, uint64_t amount);
  bool Over(uid_t uid, bool privileged, Resource r) const;
  // Whether `uid` has room for one more unit of `r` (unprivileged users).
  bool HasRoom(uid_t uid, bool privileged, Resource r) const;
  uint64_t Used(uid_t uid, Resource r) const;
  uint64_t Limit(Resource r) const;

  // True for the first refusal since `uid` last went under the limit of
  // `r`: the daemon logs once per episode, not once per refused request.
  bool FirstRefusal(uid_t uid, Resource r);

 private:
  static constexpr size_t kResources = 5;
  struct Usage {
    std::array<uint64_t, kResources> used{};
    std::array<bool, kResources> refused{};
  };
  UserLimits limits_;
  std::unordered_map<uid_t, Usage> users_;
};

}  // namespace udiag::service
