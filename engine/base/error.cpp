#include "engine/base/error.hpp"

#include <fmt/format.h>

namespace engine {

InputError::InputError(std::string file, std::string json_path, std::string reason)
    : std::runtime_error(fmt::format("{}: {}: {}", file, json_path.empty() ? "/" : json_path, reason)),
      file_(std::move(file)),
      json_path_(std::move(json_path)),
      reason_(std::move(reason)) {}

PeerFailure::PeerFailure(int peer, const std::string& why, int reporter)
    : std::runtime_error(fmt::format("peer {} failed: {}", peer, why)), peer_(peer), reporter_(reporter) {}

Timeout::Timeout(int peer, int tag, double waited_s)
    : std::runtime_error(fmt::format("timed out after {:.6f} s waiting for tag {} from peer {}", waited_s, tag, peer)),
      peer_(peer) {}

}  // namespace engine
