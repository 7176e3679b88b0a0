// Debian's SystemC runs thread processes as QuickThreads coroutines, and every switch goes
// through sc_cor_pkg_qt::yield, an exported function the library calls through its PLT.
// This executable defines the same symbol, so the library's calls land here: counted when
// they switch into a thread process (not back to the kernel's main coroutine), then passed
// on to the library's own definition.
#include "tests/bench/thread_switches.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace {

uint64_t switches = 0;

void* library_symbol(const char* name) {
  void* f = ::dlsym(RTLD_NEXT, name);
  if (!f) {
    std::fprintf(stderr, "thread switches: the SystemC library has no %s (not QuickThreads?)\n", name);
    std::abort();
  }
  return f;
}

}  // namespace

// sc_core::sc_cor_pkg_qt::yield(sc_core::sc_cor* next); `self` is the member function's this.
extern "C" void counted_yield(void* self, void* next) __asm__("_ZN7sc_core13sc_cor_pkg_qt5yieldEPNS_6sc_corE");
extern "C" void counted_yield(void* self, void* next) {
  using Yield = void (*)(void*, void*);
  using GetMain = void* (*)(void*);
  static const auto library_yield = reinterpret_cast<Yield>(library_symbol("_ZN7sc_core13sc_cor_pkg_qt5yieldEPNS_6sc_corE"));
  static const auto get_main = reinterpret_cast<GetMain>(library_symbol("_ZN7sc_core13sc_cor_pkg_qt8get_mainEv"));
  if (next != get_main(self)) switches++;
  library_yield(self, next);
}

namespace irdma_sim::bench {

uint64_t thread_switches() { return switches; }

}  // namespace irdma_sim::bench
