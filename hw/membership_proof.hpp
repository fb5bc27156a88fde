// How both ends of a connection prove they belong to the cluster: the listening
// side sends a fresh random challenge, the dialling side answers with HMAC-SHA256
// of the challenge and its Hello, keyed by the cluster's secret (OpenSSL's
// libcrypto), and a challenge of its own; the listener, once satisfied, answers
// that one in turn. A recorded answer is worthless on another connection: its
// challenge differs.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace hw {

inline constexpr std::size_t kChallengeBytes = 32, kProofBytes = 32;
using Challenge = std::array<std::uint8_t, kChallengeBytes>;
using Proof = std::array<std::uint8_t, kProofBytes>;

// A challenge from the OS's random source. Throws std::runtime_error when it has none.
Challenge make_challenge();
Proof prove(const std::string& secret, const Challenge& challenge, std::span<const char> hello);
// In constant time, so the answer leaks nothing of the right proof.
bool proves(const Proof& proof, const std::string& secret, const Challenge& challenge, std::span<const char> hello);
// What a listener proves along with the dialler's challenge: a label and its own
// challenge, so that no dialler's answer (a Hello, of another size) can pass for it.
std::vector<char> listener_context(const Challenge& listener_challenge);
// A new secret for a cluster: 32 random bytes as 64 hex digits.
std::string make_cluster_secret();

}  // namespace hw
