// The first bytes a rank sends on a connection it dialled: which rank it is
// and where it listens for its own peers. Fixed size, magic and version first.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace hw {

struct Hello {
  int rank = 0;
  int port = 0;      // where this rank accepts its peers (0: none)
  std::string host;  // ... and on which address, as it listens
};

inline constexpr std::size_t kHelloBytes = 80;
std::vector<char> encode_hello(const Hello& h);
// REQUIRES: `bytes` holds kHelloBytes. Throws std::invalid_argument saying what is wrong.
Hello decode_hello(const char* bytes);

}  // namespace hw
