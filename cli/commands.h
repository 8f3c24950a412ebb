// The `flowrt` subcommands. main.cpp parses the command line (CLI11) into CommandArgs;
// each command checks what the parser cannot (values, combinations) and returns the
// process exit code: 0 ran, 1 bad definitions, events or config, 2 bad usage.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace flowrt::cli {

// A subcommand's parsed arguments: its positional words, and the options given, by long
// name without the dashes ("out", not "-o"). A flag given reads "true" or "false".
struct CommandArgs {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;

  bool has(const std::string& name) const { return options.count(name) > 0; }
  std::string get(const std::string& name, const std::string& fallback = "") const {
    auto it = options.find(name);
    return it == options.end() ? fallback : it->second;
  }
};

int run_command(const CommandArgs& args);
int validate_command(const CommandArgs& args);
int plan_command(const CommandArgs& args);
int bench_command(const CommandArgs& args);
int inspect_command(const CommandArgs& args);
int serve_command(const CommandArgs& args);

// A project directory, as `run DIR` and `validate DIR` read it: a directory holding flows/.
bool is_project_dir(const std::string& path);

// Thrown for bad usage; main prints it with the usage and exits 2.
struct UsageError {
  std::string message;
};

}  // namespace flowrt::cli
