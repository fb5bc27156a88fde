// How a connection proves it belongs to the cluster: the listening side sends
// a fresh random challenge, the dialling side answers with HMAC-SHA256 of the
// challenge and its Hello, keyed by the cluster's secret (OpenSSL's libcrypto).
// A recorded answer is worthless on another connection: its challenge differs.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

namespace hw {

inline constexpr std::size_t kChallengeBytes = 32, kProofBytes = 32;
using Challenge = std::array<std::uint8_t, kChallengeBytes>;
using Proof = std::array<std::uint8_t, kProofBytes>;

// A challenge from the OS's random source. Throws std::runtime_error when it has none.
Challenge make_challenge();
Proof prove(const std::string& secret, const Challenge& challenge, std::span<const char> hello);
// In constant time, so the answer leaks nothing of the right proof.
bool proves(const Proof& proof, const std::string& secret, const Challenge& challenge, std::span<const char> hello);
// A new secret for a cluster: 32 random bytes as 64 hex digits.
std::string make_cluster_secret();

}  // namespace hw
