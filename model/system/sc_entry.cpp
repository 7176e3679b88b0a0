// The entry of the project's SystemC programs: libsystemc prints its banner before sc_main
// unless told not to, and this main tells it. Each program brings its own sc_main.
#include <cstdlib>

#include <systemc>

int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  return sc_core::sc_elab_and_sim(argc, argv);
}
