// Runs a shell command line and captures its standard output, for the tests that run the
// flowrt command as a user does.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace flowrt::test_support {

// What a command did: its exit code (-1 when it could not be run) and its standard output.
struct Output {
  int code;
  std::string out;
};

inline Output run_command(const std::string& command_line) {
  FILE* pipe = popen(command_line.c_str(), "r");
  if (!pipe) return Output{-1, "popen failed: " + command_line};
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  const int status = pclose(pipe);
  return Output{WEXITSTATUS(status), out};
}

}  // namespace flowrt::test_support
