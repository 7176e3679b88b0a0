// main() for test binaries that link SystemC: libsystemc.so owns main() and calls sc_main.
// ctest runs each TEST in its own process, so each may elaborate its own design.
#include <gtest/gtest.h>

#include <systemc>

#include "tests/cpp/model/system/sc_asan_options.h"

int sc_main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
