// The command line of one scenario run, shared by irdma-sim-run (every backend, and replay)
// and irdma-sim-run-pcie (the backends that need no simulator):
//   SCENARIO --out DIR [--seed N] [--no-trace] [--trace-format bin|jsonl] [--record] [--backend NAME] [--cq-writer tlm|rtl|rtl:model]
//            [--progress]
// Exit status: 0 every check passed, 1 a check failed, 2 bad usage or a malformed scenario,
// 3 the run failed, 128 + the signal when SIGINT or SIGTERM cut the run short (its outputs
// are whole).
#pragma once

#include <string>

#include "model/testbench/backend.h"
#include "model/testbench/run_loop.h"

namespace irdma_sim::testbench {

struct RunCommand {
  std::string scenario, out;
  RunOptions options;
  // --progress: a line "progress TEXT" on stdout about twice a second, for a parent process
  // (irdma_sim's runner) to relay; else a line on stderr when it is a terminal.
  bool progress_lines = false;
};

// Takes argv[i] (and its value, advancing i) into `cmd` when it is a run's argument;
// false when it is not one. Sets `error` for an argument given wrong.
bool take_run_argument(int argc, char** argv, int& i, RunCommand& cmd, std::string& error);

// Runs `cmd` on the backends `make_backend` makes, saying on stdout how it went and on
// stderr every check that failed; returns the exit status. `program` names it in errors,
// `usage` follows a usage error.
int run_command(const char* program, const char* usage, RunCommand cmd, const BackendFactory& make_backend);

// Prints "program: what" and the usage to stderr; returns 2.
int usage_error(const char* program, const char* usage, const std::string& what);

}  // namespace irdma_sim::testbench
