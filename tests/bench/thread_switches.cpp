// Debian's SystemC runs thread processes as QuickThreads coroutines, and every switch goes
// through sc_cor_pkg_qt::yield, an exported function the library calls through its PLT.
// This executable defines the same symbol, so the library's calls land here: counted, then
// passed on to the library's own definition.
#include "tests/bench/thread_switches.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace {

constexpr const char* kYield = "_ZN7sc_core13sc_cor_pkg_qt5yieldEPNS_6sc_corE";
uint64_t switches = 0;

}  // namespace

// sc_core::sc_cor_pkg_qt::yield(sc_core::sc_cor* next): `self` is the member function's this.
extern "C" void counted_yield(void* self, void* next) __asm__("_ZN7sc_core13sc_cor_pkg_qt5yieldEPNS_6sc_corE");
extern "C" void counted_yield(void* self, void* next) {
  using Yield = void (*)(void*, void*);
  static const Yield library_yield = [] {
    auto* f = reinterpret_cast<Yield>(::dlsym(RTLD_NEXT, kYield));
    if (!f) {
      std::fprintf(stderr, "thread switches: the SystemC library has no %s (not QuickThreads?)\n", kYield);
      std::abort();
    }
    return f;
  }();
  switches++;
  library_yield(self, next);
}

namespace irdma_sim::bench {

uint64_t thread_switches() { return switches; }

}  // namespace irdma_sim::bench
