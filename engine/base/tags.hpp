// Every message tag, in one place. A tag names the queue a payload waits in
// (Inbox keys on sender and tag), so two conversations that share a tag on one
// Runtime at one time would take each other's messages. The rules:
//
// 1. Epoch tags (kStep..kCollective) are sent only through EpochRuntime, which
//    puts fenced(tag, epoch) on the wire: tag + (epoch mod 1023 + 1) * kEpochStride.
//    No two of 1023 consecutive epochs share a tag, and no epoch, however
//    high, reaches an unfenced tag or overflows. Epochs 1023 apart share tags:
//    a message would have to outlive 1022 reconfigurations to be mistaken.
//    REQUIRES: 0 < tag < kEpochStride.
// 2. Unfenced engine tags go straight to the physical runtime: heartbeats
//    (small, below kEpochStride) and control (kControl, above every fenced tag).
// 3. Transport tags are negative, below every engine tag: TcpRuntime's barrier,
//    the launched nodes' results, VerbsRuntime's setup on its TCP side channel.
// 4. A link probe owns its runtime while it runs: its tags may reuse small numbers.
#pragma once

namespace engine::tags {

// Rule 1: inside one epoch, between its members (fenced).
inline constexpr int kStep = 1;         // rank 0 -> all: the next step (empty: stop)
inline constexpr int kActivation = 2;   // pipeline stage boundaries
inline constexpr int kTokens = 3;       // sampled token ids back to rank 0
inline constexpr int kCommand = 4;      // RPC-style command round trips
inline constexpr int kCollective = 10;  // all-reduce, all-gather

inline constexpr int kEpochStride = 1 << 20;
inline constexpr int kFencedEpochs = 1023;  // (kFencedEpochs + 1) * kEpochStride == kControl
// The tag an epoch tag travels under in `epoch`. REQUIRES: epoch >= 0.
constexpr int fenced(int tag, int epoch) { return tag + (epoch % kFencedEpochs + 1) * kEpochStride; }
// Whether `wire` is an epoch tag of one of the 511 epochs before `epoch`: what
// no one in `epoch` or later asks for. (Tags of the epochs after it are kept:
// a faster peer may already be there.) REQUIRES: epoch >= 0.
constexpr bool fenced_before(int wire, int epoch) {
  if (wire < kEpochStride || wire >= (kFencedEpochs + 1) * kEpochStride) return false;  // not fenced
  const int behind = (epoch % kFencedEpochs + 1 - wire / kEpochStride + kFencedEpochs) % kFencedEpochs;
  return behind >= 1 && behind <= kFencedEpochs / 2;
}

// Rule 2: on the physical runtime, across epochs.
inline constexpr int kHeartbeat = 1;
inline constexpr int kControl = 1 << 30;  // rank 0 <-> members: abort reports and decisions

// Rule 3: transports.
inline constexpr int kBarrier = -1;     // TcpRuntime::barrier
inline constexpr int kResult = -2;      // a launched node's report, to the lowest live rank
inline constexpr int kReportBeat = -3;  //   ... alive after its run, on the heartbeat channel
inline constexpr int kReporting = -4;   //   ... the reporter says so, for a rank stopped meanwhile
inline constexpr int kEndpoint = -100;  // VerbsRuntime side channel: queue pair endpoints
inline constexpr int kReady = -101;     //   ... every peer connected

// Rule 4: hw/link_probe, alone on its runtime.
inline constexpr int kPing = 1, kBulk = 2, kAck = 3, kGo = 4, kDone = 5, kFigures = 6, kRound = 7;

}  // namespace engine::tags
