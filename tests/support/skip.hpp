// Skipping a test for something the machine lacks, visibly: the reason goes
// to the log (scripts/skipped-tests lists it after `make test`), and on CI
// (CI=true) a skip for something CI provides fails instead, so a green CI
// run cannot hide a suite that never ran.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace testsupport {

inline bool on_ci() {
  const char* ci = std::getenv("CI");
  return ci && std::strcmp(ci, "true") == 0;
}

}  // namespace testsupport

// REQUIRES: in a test body or SetUp. `ci_provides`: CI's machine has what is missing.
#define SKIP_UNLESS_CI_PROVIDES(ci_provides, reason)                                                                \
  do {                                                                                                              \
    if ((ci_provides) && testsupport::on_ci()) FAIL() << "CI provides this, yet the test would skip: " << (reason); \
    GTEST_SKIP() << (reason);                                                                                       \
  } while (0)
