// For a program that runs the SystemC kernel under AddressSanitizer; include it in exactly
// one of its files. LeakSanitizer's exit-time scan can find the main thread's stack range
// left on a SystemC coroutine's (sc_start returned with process stacks still suspended) and
// then reports what lives on that stack as leaked, or dies with a fatal error of its own,
// after every check passed. Such programs run without the leak check; every other ASan and
// UBSan check stays on, and the programs without SystemC keep it too.
#pragma once

#if defined(__SANITIZE_ADDRESS__)  // GCC
#define IRDMA_SIM_SC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)  // clang
#define IRDMA_SIM_SC_ASAN 1
#endif
#endif
#ifdef IRDMA_SIM_SC_ASAN
extern "C" const char* __asan_default_options() { return "detect_leaks=0"; }
#endif
