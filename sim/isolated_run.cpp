#include "sim/isolated_run.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"

namespace dmuon::sim {
namespace {

void write_all(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<std::size_t>(n);
  }
}

}  // namespace

IsolatedRun::IsolatedRun(const std::function<std::string()>& work) {
  int fds[2];
  if (::pipe(fds) != 0) throw Error(std::string("sim: pipe failed: ") + std::strerror(errno));
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(std::string("sim: fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    std::string out;
    char status = 'O';
    try {
      out = work();
    } catch (const std::exception& e) {
      status = 'E';
      out = e.what();
    }
    write_all(fds[1], std::string(1, status) + out);
    ::close(fds[1]);
    std::fflush(stdout);
    ::_exit(0);
  }
  ::close(fds[1]);
  pid_ = pid;
  fd_ = fds[0];
}

IsolatedRun::~IsolatedRun() {
  if (fd_ >= 0) ::close(fd_);
  if (pid_ > 0) {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

std::string IsolatedRun::wait() {
  std::string got;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd_);
  fd_ = -1;
  int wstatus = 0;
  while (::waitpid(pid_, &wstatus, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  if (WIFSIGNALED(wstatus)) throw Error("sim: simulation process killed by signal " + std::to_string(WTERMSIG(wstatus)));
  if (got.empty()) throw Error("sim: simulation process ended without a result");
  if (got[0] == 'E') throw Error(got.substr(1));
  return got.substr(1);
}

std::string run_isolated(const std::function<std::string()>& work) { return IsolatedRun(work).wait(); }

}  // namespace dmuon::sim
