// How a VerbsRuntime connects: which device per peer, frame stride, queue
// depth, queue pair type and timeouts. No verbs dependency.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hw/verbs/device_matrix.hpp"

namespace hw {

// UC is what macOS offers; Linux rdma-core offers both.
enum class QpType { kUC, kRC };

struct VerbsOptions {
  DeviceMatrix::Row devices;       // this rank's row: device per peer, nullopt for itself
  std::size_t frame_bytes = 4096;  // stride; macOS 26.2 takes only 4 KiB, 26.3+ up to 512 KiB
  std::uint32_t queue_depth = 64;  // frames each side keeps posted per peer
  QpType qp_type = QpType::kUC;
  double setup_timeout_s = 30;  // endpoint exchange and the barrier after it
  double peer_timeout_s = 30;   // a peer that frees no credit or send slot this long has failed
  // A receive that hears nothing from its peer this long asks it for a frame:
  // UC resends nothing, so a frame lost at the end of a burst shows as a gap
  // only when a later frame arrives, and the peer may have nothing more to send.
  double ask_after_s = 0.2;
  // What one peer's messages may hold here (unread, or waiting to be
  // forwarded) before its frames are owed back no more: it then stops after
  // one window. Above the engine's largest message, so one unread message of
  // any tag never stops the next.
  std::uint64_t max_held_bytes = std::uint64_t{256} << 20;
  // Backpressure: send() waits while this much is queued for a peer, as
  // TcpOptions' limit does; smaller than TCP's, since a queue past a few
  // windows only costs memory here (a stream of 4 KiB messages ran slower
  // with 256 MiB queued, from page faults and cold caches).
  std::uint64_t max_queued_bytes = std::uint64_t{64} << 20;
};

}  // namespace hw
