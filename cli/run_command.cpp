// flowrt run: load definitions, apply the events file on a virtual clock, print contexts.
#include <atomic>
#include <csignal>
#include <fstream>
#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/table_output.h"
#include "plans/value_json.h"
#include "runtime/engine.h"
#include "runtime/engine_log.h"
#include "runtime/harness.h"
#include "runtime/project.h"

namespace flowrt::cli {
namespace {

// SIGINT and SIGTERM during a run: the first asks the engine to stop (intake stops, the
// run shuts down and reports); a second one ends the process at once.
std::atomic<int> g_stop_signal{0};
std::atomic<Engine*> g_engine{nullptr};

extern "C" void on_stop_signal(int sig) {
  if (g_stop_signal.exchange(sig) != 0) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  if (Engine* e = g_engine.load()) e->request_stop();
}

// Installs the handlers for its scope. No SA_RESTART: a blocked read returns.
class StopSignals {
 public:
  StopSignals() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignals() {
    g_engine.store(nullptr);
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  void watch(Engine* engine) {
    g_engine.store(engine);
    if (g_stop_signal.load() != 0) engine->request_stop();  // came before the engine existed
  }

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

}  // namespace

int run_command(const std::vector<std::string>& raw) {
  StopSignals signals;
  ParsedArgs args = parse_args(raw, {"flows", "events", "config", "format", "out", "log-level"});
  if (args.positional.size() > 1) throw UsageError{"run takes one directory"};
  if (args.positional.empty() && (!args.has("flows") || !args.has("events"))) {
    throw UsageError{"run needs DIR, or --flows and --events"};
  }
  const std::string format = args.get("format", "table");
  if (format != "table" && format != "json") throw UsageError{"--format must be table or json"};

  // The project as the library opens it (runtime/project.h); --flows, --events and
  // --config name its files explicitly.
  ProjectFiles files;
  if (!args.positional.empty()) {
    Result<ProjectFiles> found = project_files(args.positional[0]);
    if (!found) throw UsageError{found.message()};
    files = std::move(*found);
  }
  files.flows = args.get("flows", files.flows);
  files.events = args.get("events", files.events);
  files.config = args.get("config", files.config);

  std::vector<std::string> errors;
  auto fail = [&](const Diagnostics& diags) {
    for (const Diagnostic& d : diags.list()) std::cerr << d.describe() << "\n";
    if (diags.omitted() > 0) std::cerr << "... and " << diags.omitted() << " more errors\n";
    return 1;
  };

  Result<Project, Diagnostics> project = read_project(std::move(files));
  if (!project) return fail(project.error());
  project->options.log_level = args.get("log-level");
  if (!project->options.log_level.empty() && !set_engine_log_level(project->options.log_level)) {
    throw UsageError{"--log-level must be off, error, warn, info or debug"};
  }
  Result<std::unique_ptr<Engine>, Diagnostics> opened = open_project(*project);
  if (!opened) return fail(opened.error());
  Engine& engine = **opened;
  signals.watch(&engine);

  Harness harness(engine);
  const std::string& events = project->files.events;
  Status ran = events.empty() ? Status::ok() : harness.run_file(events);
  if (!ran) errors.push_back(ran.message());
  const int stop_signal = g_stop_signal.load();
  if (stop_signal != 0) {
    // Stopped: every context that has not ended is cancelled, which releases its locks.
    const size_t cancelled = engine.shutdown();
    errors.push_back(std::string("stopped by ") + (stop_signal == SIGINT ? "SIGINT" : "SIGTERM") + ": " +
                     std::to_string(cancelled) + " contexts cancelled");
  }

  if (args.has("out")) {
    std::ofstream out(args.get("out"));
    if (!out) {
      errors.push_back(args.get("out") + ": cannot write");
    } else {
      for (const ContextRecord& c : engine.contexts()) out << c.value().to_json() << "\n";
    }
  }
  if (format == "json") {
    std::cout << engine.document(errors).to_json() << "\n";
  } else {
    print_table(engine, errors, std::cout);
  }
  if (!errors.empty()) {
    for (const std::string& e : errors) std::cerr << e << "\n";
    return stop_signal != 0 ? 128 + stop_signal : 1;
  }
  return 0;
}

}  // namespace flowrt::cli
