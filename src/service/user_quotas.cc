#include "service/user_quotas.h"

#include <algorithm>

namespace udiag::service {

uint64_t UserQuotas::Limit(Resource r) const {
  switch (r) {
    case Resource::kFds: return limits_.fds;
    case Resource::kQueuedBytes: return limits_.queued_bytes;
    case Resource::kEvents: return limits_.events;
    case Resource::kEnablers: return limits_.enablers;
    case Resource::kRingBytes: return limits_.ring_bytes;
  }
  return 0;
}

uint64_t UserQuotas::Used(uid_t uid, Resource r) const {
  auto it = users_.find(uid);
  return it == users_.end() ? 0 : it->second.used[static_cast<size_t>(r)];
}

bool UserQuotas::HasRoom(uid_t uid, bool privileged, Resource r) const {
  return privileged || Used(uid, r) < Limit(r);
}

bool UserQuotas::Over(uid_t uid, bool privileged, Resource r) const {
  return !privileged && Used(uid, r) > Limit(r);
}

bool UserQuotas::TryCharge(uid_t uid, bool privileged, Resource r, uint64_t amount) {
  if (!privileged && Used(uid, r) + amount > Limit(r)) return false;
  Charge(uid, r, amount);
  return true;
}

void UserQuotas::Charge(uid_t uid, Resource r, uint64_t amount) {
  users_[uid].used[static_cast<size_t>(r)] += amount;
}

void UserQuotas::Release(uid_t uid, Resource r, uint64_t amount) {
  auto it = users_.find(uid);
  if (it == users_.end()) return;
  Usage& usage = it->second;
  size_t i = static_cast<size_t>(r);
  usage.used[i] -= std::min(usage.used[i], amount);
  if (usage.used[i] < Limit(r)) usage.refused[i] = false;
  for (uint64_t used : usage.used) {
    if (used) return;
  }
  users_.erase(it);  // the map holds only users who hold something
}

bool UserQuotas::FirstRefusal(uid_t uid, Resource r) {
  bool& refused = users_[uid].refused[static_cast<size_t>(r)];
  bool first = !refused;
  refused = true;
  return first;
}

}  // namespace udiag::service
