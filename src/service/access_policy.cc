#include "service/access_policy.h"

#include <algorithm>

namespace udiag::service {
namespace {
bool InGroup(const base::PeerCredentials& peer, std::optional<gid_t> group) {
  if (!group) return false;
  return peer.gid == *group || std::find(peer.groups.begin(), peer.groups.end(), *group) != peer.groups.end();
}
}  // namespace

Caller AccessPolicy::Evaluate(const base::PeerCredentials& peer) const {
  Caller c;
  c.privileged = peer.uid == 0 || peer.uid == owner;
  c.producer = c.privileged || InGroup(peer, producer_group);
  c.consumer = c.privileged || InGroup(peer, consumer_group);
  return c;
}

}  // namespace udiag::service
