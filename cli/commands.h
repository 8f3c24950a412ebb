// The `flowrt` subcommands. Each takes its arguments (after the subcommand name) and
// returns the process exit code: 0 ran, 1 bad definitions, events or config, 2 bad usage.
#pragma once

#include <string>
#include <vector>

namespace flowrt::cli {

int run_command(const std::vector<std::string>& args);
int validate_command(const std::vector<std::string>& args);
int plan_command(const std::vector<std::string>& args);
int bench_command(const std::vector<std::string>& args);

// A project directory, as `run DIR` and `validate DIR` read it: a directory holding flows/.
bool is_project_dir(const std::string& path);

// Thrown for bad usage; main prints it with the usage and exits 2.
struct UsageError {
  std::string message;
};

}  // namespace flowrt::cli
