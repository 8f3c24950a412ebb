// What the tests of the flowrt command share: running the binary as a user runs it (its
// exit code and output), with a signal at a cue, and a fixture with a project directory of
// its own.
#pragma once

#include <gtest/gtest.h>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/run_command.h"
#include "tests/support/test_support.h"

namespace flowrt::cli_testing {

using test_support::Output;
using test_support::run_command;

namespace fs = std::filesystem;

// Runs flowrt with `args`; its stdout and stderr both, unless `redirect` says otherwise.
inline Output run(const std::string& args, const std::string& redirect = " 2>&1") {
  return run_command(std::string(FLOWRT_BINARY) + " " + args + redirect);
}

// Runs flowrt with `args`, with `env` (NAME=VALUE ...) added to its environment.
inline Output run_with_env(const std::string& env, const std::string& args) {
  return run_command("env " + env + " " + std::string(FLOWRT_BINARY) + " " + args + " 2>&1");
}

// Runs flowrt with `args` (and `env`, NAME=VALUE each, added to its environment), sends
// `sig` once its stdout or its stderr (its engine log) shows `cue`, and returns its exit
// code and stdout; `log`, when given, gets all of its stderr.
inline Output run_and_signal(const std::vector<std::string>& args, int sig, const std::string& cue,
                             std::string* log = nullptr, const std::vector<std::string>& env = {}) {
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) return Output{-1, "pipe failed"};
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    close(out_pipe[0]);
    close(err_pipe[0]);
    for (const std::string& e : env) putenv(strdup(e.c_str()));
    std::vector<char*> argv{const_cast<char*>(FLOWRT_BINARY)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(FLOWRT_BINARY, argv.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  std::string out, err;
  char buf[4096];
  // Reads both pipes, so that the child never blocks writing either, until `until` holds
  // or both have ended.
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  auto read_until = [&](const std::function<bool()>& until) {
    while (open_fds > 0 && !until() && poll(fds, 2, -1) > 0) {
      for (pollfd& f : fds) {
        if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP))) continue;
        const ssize_t n = read(f.fd, buf, sizeof buf);
        if (n <= 0) {
          f.fd = -1;
          --open_fds;
        } else {
          (&f == &fds[0] ? out : err).append(buf, static_cast<size_t>(n));
        }
      }
    }
  };
  read_until([&] { return out.find(cue) != std::string::npos || err.find(cue) != std::string::npos; });
  kill(pid, sig);
  read_until([] { return false; });
  close(out_pipe[0]);
  close(err_pipe[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (log) *log = err;
  return Output{WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status), out};
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(test_support::temp_path("flowrt-cli-" + test_support::current_test_file_name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "flows");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& rel, const std::string& text) { std::ofstream(dir_ / rel) << text; }
  std::string dir() const { return dir_.string(); }

  fs::path dir_;
};

}  // namespace flowrt::cli_testing
