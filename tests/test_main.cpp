#include <gtest/gtest.h>

#include "hw/os.hpp"

int main(int argc, char** argv) {
  hw::record_argv0(argv[0]);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
