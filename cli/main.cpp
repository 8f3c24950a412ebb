// flowrt: the command line (SPEC section 12). The only catch-all in the project.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace {

constexpr const char* kUsage = R"(usage:
  flowrt run DIR [--format table|json] [--out FILE] [--log-level off|error|warn|info|debug]
                 [--events FILE] [--flow ID] [--status STATUS]
  flowrt run --flows DIR --events FILE [--config FILE] [--format table|json] [--out FILE]
  flowrt validate DIR | PATH...
  flowrt plan PATH... --flow ID
  flowrt bench [--workload triage|fanout|events|locks|compile] [--events N] [--workers K] [--rate R]
               [--retention N] [--json]
exit codes: 0 ran, 1 bad definitions, events or config, 2 bad usage,
  130 / 143 run stopped by SIGINT / SIGTERM (contexts not ended are cancelled; what ran is printed)
)";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  try {
    if (command == "run") return flowrt::cli::run_command(args);
    if (command == "validate") return flowrt::cli::validate_command(args);
    if (command == "plan") return flowrt::cli::plan_command(args);
    if (command == "bench") return flowrt::cli::bench_command(args);
    std::cerr << "flowrt: unknown command '" << command << "'\n" << kUsage;
    return 2;
  } catch (const flowrt::cli::UsageError& e) {
    std::cerr << "flowrt " << command << ": " << e.message << "\n" << kUsage;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "flowrt " << command << ": internal error: " << e.what() << "\n";
    return 3;
  }
}
