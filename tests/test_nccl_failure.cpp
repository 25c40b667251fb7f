// A rank killed in the middle of a step: the surviving rank must notice (NCCL error or the
// executor's timeout), abort its communicators and exit non-zero with a message naming its rank
// and the op it was in, instead of hanging. Two `dmuon-bench step` processes bootstrapped
// through DMUON_RANK/DMUON_NCCL_ID_FILE; needs 2 GPUs, skips otherwise.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <iostream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "catch_compat.hpp"
#include "kernels/device_query.hpp"

namespace {

struct Child {
  pid_t pid = -1;
  std::string log;  // stderr+stdout file
};

Child spawn_rank(int rank, const std::string& id_file, const std::string& log) {
  Child c;
  c.log = log;
  c.pid = fork();
  if (c.pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    setenv("DMUON_RANK", std::to_string(rank).c_str(), 1);
    setenv("DMUON_WORLD", "2", 1);
    setenv("DMUON_NCCL_ID_FILE", id_file.c_str(), 1);
    const std::string scenario = std::string(DMUON_SOURCE_DIR) + "/scenarios/verify-small.yaml";
    execl(DMUON_BENCH_EXE, DMUON_BENCH_EXE, "step", "--scenario", scenario.c_str(), "--launcher", "env", "--strategy",
          "dedicated", "--warmup", "0", "--iterations", "100000", "--timeout", "20", "--out-dir", "/tmp", "--machine",
          "kill-test", static_cast<char*>(nullptr));
    _exit(127);
  }
  return c;
}

std::string read_file(const std::string& path) {
  std::string out;
  if (FILE* f = std::fopen(path.c_str(), "r")) {
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    std::fclose(f);
  }
  return out;
}

// Waits up to `seconds` for the child; returns its wait status, or -1 if it is still running.
int wait_for(pid_t pid, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return -1;
}

}  // namespace

TEST_CASE("a rank killed mid-step makes the other exit non-zero naming rank and op", "[gpu][nccl]") {
  const auto devices = dmuon::cuda::visible_devices();
  if (devices.size() < 2) {
    std::cout << "SKIP NCCL failure test: needs 2 GPUs, " << devices.size() << " visible"
              << (devices.empty() ? " (" + dmuon::cuda::no_device_reason() + ")" : "") << "\n";
    return;
  }
  const std::string dir = "/tmp/dmuon-kill-test-" + std::to_string(getpid());
  REQUIRE(std::system(("mkdir -p " + dir).c_str()) == 0);
  Child r0 = spawn_rank(0, dir + "/nccl-id", dir + "/rank0.log");
  Child r1 = spawn_rank(1, dir + "/nccl-id", dir + "/rank1.log");
  // Let both set up and enter the measured loop, then kill rank 1 without warning.
  bool running = false;
  for (int i = 0; i < 600 && !running; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    running = read_file(r0.log).find("planning and measuring") != std::string::npos;
  }
  REQUIRE(running);
  std::this_thread::sleep_for(std::chrono::seconds(4));  // past setup and warm-up, inside the steps
  REQUIRE(kill(r1.pid, SIGKILL) == 0);
  (void)wait_for(r1.pid, 10);
  const int status = wait_for(r0.pid, 60);  // the executor's timeout is 20 s: no hang
  if (status == -1) kill(r0.pid, SIGKILL);
  const std::string log = read_file(r0.log);
  INFO("rank 0 log:\n" << log);
  REQUIRE(status != -1);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) != 0);
  CHECK(log.find("rank 0") != std::string::npos);
  // The op it was in: a Plan op ("rank 0 op 17 (reduce ...) did not complete") or the bench's
  // barrier between phases ("barrier (all-gather of host values) did not complete").
  CHECK(log.find("did not complete") != std::string::npos);
  CHECK((log.find(" op ") != std::string::npos || log.find("barrier") != std::string::npos));
}
