// softrdma's library for netns tests that preload it in each namespace, and
// the skip when the build has none (no verbs headers; CI's build has them).
#pragma once

#include <string>

#include "support/skip.hpp"

namespace testsupport {

#ifdef SOFTRDMA_LIBRARY
inline constexpr const char* kSoftRdma = SOFTRDMA_LIBRARY;
#else
inline constexpr const char* kSoftRdma = "";
#endif

}  // namespace testsupport

// REQUIRES: in a test body or SetUp.
#define SKIP_UNLESS_SOFTRDMA_BUILT()                                                  \
  do {                                                                                \
    if (std::string(testsupport::kSoftRdma).empty())                                  \
      SKIP_UNLESS_CI_PROVIDES(true, "softrdma is built only with the verbs headers"); \
  } while (0)
