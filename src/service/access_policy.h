// Who may do what, decided from the kernel-verified peer credentials
// (SO_PEERCRED/SO_PEERGROUPS), never from anything the peer claims. This is
// tracefs's file-mode model: producers are the users who may open
// user_events_data, consumers those who may read traces and enable events.
#pragma once

#include <sys/types.h>

#include <optional>

#include "base/unix_socket.h"
#include "service/tracefs_tree.h"

namespace udiag::service {

struct AccessPolicy {
  uid_t owner = 0;  // the daemon's user; root for the system daemon
  std::optional<gid_t> producer_group;
  std::optional<gid_t> consumer_group;

  // Root and the owner may do everything, including what the kernel reserves
  // for CAP_PERFMON; members of the groups get the matching role.
  Caller Evaluate(const base::PeerCredentials& peer) const;
};

}  // namespace udiag::service
