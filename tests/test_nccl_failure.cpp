// Distributed faults on 2 GPUs: a rank killed mid-step, a rank stalled past the timeout, and
// ranks started with different Plans. Every surviving rank must notice (NCCL error, the
// executor's timeout, or the Plan fingerprint check), abort its communicators and exit non-zero
// with a message naming its rank and the cause, instead of hanging. Two `dmuon-bench step`
// processes bootstrapped through DMUON_RANK/DMUON_NCCL_ID_FILE; skips (tests/gpu_skip.hpp)
// without 2 GPUs. Every file (NCCL id, logs, the bench's reports) goes to the test's own
// temporary directory.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <iostream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "catch_compat.hpp"
#include "gpu_skip.hpp"
#include "kernels/cuda/device_query.hpp"
#include "run_command.hpp"
#include "test_temp_dir.hpp"

namespace {

struct Child {
  pid_t pid = -1;
  std::string log;  // stderr+stdout file
};

// Rank `rank` of a 2-rank `dmuon-bench step`; its reports go to the folder of `id_file`.
Child spawn_rank(int rank, const std::string& id_file, const std::string& log, const char* strategy = "dedicated") {
  Child c;
  c.log = log;
  const std::string out_dir = std::filesystem::path(id_file).parent_path().string();
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
          strategy, "--warmup", "0", "--iterations", "100000", "--timeout", "20", "--out-dir", out_dir.c_str(), "--machine",
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

bool have_two_gpus(const char* what) {
  const auto devices = dmuon::cuda::visible_devices();
  if (devices.size() >= 2) return true;
  dmuon::test::skip_test(what, "needs 2 GPUs, " + std::to_string(devices.size()) + " visible" +
                                    (devices.empty() ? " (" + dmuon::cuda::no_device_reason() + ")" : ""));
  return false;
}

// A folder of its own for one test case, inside the process's temporary directory.
std::string fresh_dir(const char* name) {
  const std::string dir = dmuon::test::temp_path(name);
  REQUIRE(std::filesystem::create_directories(dir));
  return dir;
}

// Waits for rank 0 to enter the measured loop, then a little more (past setup and warm-up).
void wait_until_measuring(const Child& r0) {
  bool running = false;
  for (int i = 0; i < 600 && !running; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    running = read_file(r0.log).find("planning and measuring") != std::string::npos;
  }
  REQUIRE(running);
  std::this_thread::sleep_for(std::chrono::seconds(4));
}

// The child's exit: it must have ended by itself, non-zero, with a line naming its rank.
void require_failed_exit(const Child& c, int status, int rank) {
  const std::string log = read_file(c.log);
  INFO("rank " << rank << " log:\n" << log);
  REQUIRE(status != -1);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) != 0);
  CHECK(log.find("rank " + std::to_string(rank)) != std::string::npos);
}

}  // namespace

TEST_CASE("a rank stalled past the timeout: both ranks exit non-zero, no hang", "[gpu][nccl]") {
  if (!have_two_gpus("NCCL stall test")) return;
  const std::string dir = fresh_dir("stall-test");
  Child r0 = spawn_rank(0, dir + "/nccl-id", dir + "/rank0.log");
  Child r1 = spawn_rank(1, dir + "/nccl-id", dir + "/rank1.log");
  wait_until_measuring(r0);
  REQUIRE(kill(r1.pid, SIGSTOP) == 0);  // alive but silent: no error anywhere, only time
  const int status0 = wait_for(r0.pid, 60);
  if (status0 == -1) kill(r0.pid, SIGKILL);
  REQUIRE(kill(r1.pid, SIGCONT) == 0);  // it wakes up to an aborted peer
  const int status1 = wait_for(r1.pid, 60);
  if (status1 == -1) kill(r1.pid, SIGKILL);
  require_failed_exit(r0, status0, 0);
  CHECK(read_file(r0.log).find("did not complete") != std::string::npos);
  require_failed_exit(r1, status1, 1);
}

TEST_CASE("ranks with different Plans fail at once naming the mismatch", "[gpu][nccl]") {
  if (!have_two_gpus("NCCL plan-mismatch test")) return;
  const std::string dir = fresh_dir("mismatch-test");
  Child r0 = spawn_rank(0, dir + "/nccl-id", dir + "/rank0.log", "dedicated");
  Child r1 = spawn_rank(1, dir + "/nccl-id", dir + "/rank1.log", "ddp-redundant");
  const int status0 = wait_for(r0.pid, 120);
  const int status1 = wait_for(r1.pid, 120);
  if (status0 == -1) kill(r0.pid, SIGKILL);
  if (status1 == -1) kill(r1.pid, SIGKILL);
  require_failed_exit(r0, status0, 0);
  require_failed_exit(r1, status1, 1);
  CHECK(read_file(r0.log).find("differs from rank 1") != std::string::npos);
  CHECK(read_file(r1.log).find("differs from rank 0") != std::string::npos);
}

TEST_CASE("a rank killed mid-step makes the other exit non-zero naming rank and op", "[gpu][nccl]") {
  if (!have_two_gpus("NCCL failure test")) return;
  const std::string dir = fresh_dir("kill-test");
  Child r0 = spawn_rank(0, dir + "/nccl-id", dir + "/rank0.log");
  Child r1 = spawn_rank(1, dir + "/nccl-id", dir + "/rank1.log");
  wait_until_measuring(r0);
  REQUIRE(kill(r1.pid, SIGKILL) == 0);
  (void)wait_for(r1.pid, 10);
  const int status = wait_for(r0.pid, 60);  // the executor's timeout is 20 s: no hang
  if (status == -1) kill(r0.pid, SIGKILL);
  require_failed_exit(r0, status, 0);
  const std::string log = read_file(r0.log);
  // The op it was in: a Plan op ("rank 0 op 17 (reduce ...) did not complete") or the bench's
  // barrier between phases ("barrier (all-gather of host values) did not complete").
  CHECK(log.find("did not complete") != std::string::npos);
  CHECK((log.find(" op ") != std::string::npos || log.find("barrier") != std::string::npos));
}

TEST_CASE("a rank that never joins: the other exits non-zero at the set-up deadline, no hang", "[gpu][nccl]") {
  // One GPU is enough: rank 1 of the two is never started (it died before NCCL init), so
  // rank 0 waits inside ncclCommInitRank, which no error or abort can interrupt.
  if (dmuon::cuda::visible_devices().empty()) {
    dmuon::test::skip_test("NCCL never-joined test", dmuon::cuda::no_device_reason());
    return;
  }
  const std::string dir = fresh_dir("join-test");
  Child r0 = spawn_rank(0, dir + "/nccl-id", dir + "/rank0.log");
  const int status = wait_for(r0.pid, 90);  // --timeout 20 bounds the set-up too
  if (status == -1) kill(r0.pid, SIGKILL);
  require_failed_exit(r0, status, 0);
  CHECK(read_file(r0.log).find("rank 0: creating the world communicator of 2 ranks did not finish within 20 s") !=
        std::string::npos);
}

TEST_CASE("dmuon-bench step refuses a timeout that could never abort or always would, before any GPU work", "[nccl][cli]") {
  // Runs without a GPU: the flags are checked before the launcher starts.
  const std::string scenario = std::string(DMUON_SOURCE_DIR) + "/scenarios/verify-small.yaml";
  for (const char* bad : {"0", "-5", "nan", "inf"}) {
    const CommandOutcome o = run_command(DMUON_BENCH_EXE, "step --scenario " + scenario + " --timeout " + std::string(bad));
    INFO(o.output);
    CHECK(o.exit_code == 2);
    CHECK(o.output.find("--timeout: must be a positive number of seconds, got") != std::string::npos);
  }
  const CommandOutcome o = run_command(DMUON_BENCH_EXE, "step --scenario " + scenario + " --iterations 0");
  CHECK(o.exit_code == 2);
  CHECK(o.output.find("--iterations: must be >= 1, got 0") != std::string::npos);
}
