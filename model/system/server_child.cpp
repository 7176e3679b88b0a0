#include "model/system/server_child.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <iostream>
#include <stdexcept>
#include <thread>

namespace irdma_sim::system {

namespace {

std::string fresh_socket_path() {
  static std::atomic<unsigned> serial{0};
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/irdma-sim-" + std::to_string(getpid()) + "-" +
         std::to_string(serial++) + ".sock";
}

std::string describe(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status) ? "exit status " + std::to_string(WEXITSTATUS(status)) : "";
  if (WIFSIGNALED(status))
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "ended in an unknown way";
}

}  // namespace

ServerChild::ServerChild(const testbench::SimConfig& cfg, ServeOptions options, const std::string& socket_path)
    : path_(socket_path.empty() ? fresh_socket_path() : socket_path) {
  options.serve_next_client = false;
  // The child runs SystemC, malloc and streams: safe after fork only from one thread.
  if (std::filesystem::exists("/proc/self/task") &&
      std::distance(std::filesystem::directory_iterator("/proc/self/task"), std::filesystem::directory_iterator{}) > 1)
    throw std::runtime_error("cannot start the device server from a process with more than one thread "
                             "(run the scenario in a process of its own: irdma-sim run, or irdma_sim.run)");
  const pid_t parent = getpid();
  // Output buffered here would otherwise be written twice, once by the child.
  std::cout.flush();
  std::fflush(nullptr);
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error(std::string("cannot start the device server: fork: ") + strerror(errno));
  if (pid_ > 0) return;
  // The child: dies with its parent (and if the parent is gone already, goes now), and
  // leaves the terminal's process group, so Ctrl-C stops the run, which then stops it.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(1);
  setpgid(0, 0);
  int code = 0;
  try {
    serve_device(cfg, path_, options);
  } catch (const std::exception& e) {
    std::cerr << "irdma-sim: device server: " << e.what() << "\n";
    code = 3;
  }
  _exit(code);
}

// SIGTERM, and SIGKILL for a server that does not end within a few seconds (a model stuck
// in a loop of its own).
ServerChild::~ServerChild() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  try {
    wait(5000);
  } catch (const std::runtime_error&) {
    kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

std::optional<std::string> ServerChild::poll() {
  int status = 0;
  if (pid_ <= 0 || waitpid(pid_, &status, WNOHANG) != pid_) return std::nullopt;
  pid_ = -1;
  return describe(status);
}

std::string ServerChild::wait(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    if (std::optional<std::string> how = poll()) return *how;
    if (std::chrono::steady_clock::now() >= deadline)
      throw std::runtime_error("the device server did not end within " + std::to_string(timeout_ms) + " ms");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace irdma_sim::system
