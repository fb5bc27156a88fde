#include "hw/membership_proof.hpp"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <stdexcept>
#include <string_view>
#include <vector>

namespace hw {

namespace {

template <std::size_t N>
std::array<std::uint8_t, N> random_bytes() {
  std::array<std::uint8_t, N> out{};
  if (RAND_bytes(out.data(), static_cast<int>(out.size())) != 1)
    throw std::runtime_error("no random bytes from OpenSSL (RAND_bytes failed)");
  return out;
}

}  // namespace

Challenge make_challenge() { return random_bytes<kChallengeBytes>(); }

Proof prove(const std::string& secret, const Challenge& challenge, std::span<const char> hello) {
  std::vector<std::uint8_t> message(challenge.begin(), challenge.end());
  message.insert(message.end(), hello.begin(), hello.end());
  Proof proof{};
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), message.data(), message.size(), proof.data(),
            &len) ||
      len != proof.size())
    throw std::runtime_error("HMAC-SHA256 failed");
  return proof;
}

bool proves(const Proof& proof, const std::string& secret, const Challenge& challenge, std::span<const char> hello) {
  const Proof right = prove(secret, challenge, hello);
  return CRYPTO_memcmp(proof.data(), right.data(), proof.size()) == 0;
}

std::vector<char> listener_context(const Challenge& listener_challenge) {
  constexpr std::string_view kLabel = "meshinfer listener";
  std::vector<char> context(kLabel.begin(), kLabel.end());
  context.insert(context.end(), listener_challenge.begin(), listener_challenge.end());
  return context;
}

std::string make_cluster_secret() {
  std::string hex;
  for (std::uint8_t b : random_bytes<32>()) hex += fmt::format("{:02x}", b);
  return hex;
}

}  // namespace hw
