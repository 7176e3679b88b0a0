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

ServerChild::ServerChild(const SimConfig& cfg, ServeOptions options, const std::string& socket_path)
    : path_(socket_path.empty() ? fresh_socket_path() : socket_path) {
  options.serve_next_client = false;
  const pid_t parent = getpid();
  // Output buffered here would otherwise be written twice, once by the child.
  std::cout.flush();
  std::fflush(nullptr);
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error(std::string("cannot start the device server: fork: ") + strerror(errno));
  if (pid_ > 0) return;
  // The child: dies with its parent (and if the parent is gone already, goes now).
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(1);
  int code = 0;
  try {
    serve_device(cfg, path_, options);
  } catch (const std::exception& e) {
    std::cerr << "irdma-sim: device server: " << e.what() << "\n";
    code = 3;
  }
  _exit(code);
}

ServerChild::~ServerChild() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
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
