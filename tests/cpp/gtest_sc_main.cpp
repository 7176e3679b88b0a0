// main() for test binaries that link SystemC: libsystemc.so owns main() and calls sc_main.
// ctest runs each TEST in its own process, so each may elaborate its own design.
#include <gtest/gtest.h>

#include <systemc>

int sc_main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

#if defined(__SANITIZE_ADDRESS__)
// LeakSanitizer's exit-time scan can find this thread's stack range left on a SystemC
// coroutine's (sc_start returned with process stacks still suspended) and die with a fatal
// error of its own after a test passed. The SystemC tests run without the leak check; every
// other ASan and UBSan check stays on, and the suites without SystemC keep it too.
extern "C" const char* __asan_default_options() { return "detect_leaks=0"; }
#endif
