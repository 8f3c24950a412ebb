// flowrt run: load definitions, apply the events file on a virtual clock, print contexts.
// With --data FILE the state is kept in FILE, and a later run goes on from it.
#include <unistd.h>

#include <atomic>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "cli/run_errors.h"
#include "cli/table_output.h"
#include "plans/value_json.h"
#include "runtime/engine.h"
#include "runtime/engine_log.h"
#include "runtime/harness.h"
#include "runtime/project.h"
#include "runtime/run_config.h"

namespace flowrt::cli {
namespace {

// Why the context records cannot be written to `path` (--out), as far as can be told
// before the run: "" when they can. Checked first, so that a run whose records have
// nowhere to go is not made (with --data it would be kept, and made again when run again).
std::string why_out_is_not_writable(const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(st)) return "it is a directory";
  if (std::filesystem::exists(st)) return ::access(path.c_str(), W_OK) == 0 ? "" : std::strerror(errno);
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return ::access(dir.empty() ? "." : dir.c_str(), W_OK | X_OK) == 0 ? "" : std::strerror(errno);
}

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

Value errors_value(const std::vector<RunError>& errors) {
  std::vector<Value> out;
  for (const RunError& e : errors) out.push_back(e.to_value());
  return Value::array(std::move(out));
}

// A file in `dir` that looks like a misnamed events file: events.json, events.ndjson,
// events.jsonl.txt, or any other *.jsonl / *.ndjson; "" when none does.
std::string events_look_alike(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> near, other;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec)) continue;
    const std::string name = e.path().filename().string();
    const std::string ext = e.path().extension().string();
    if (name.rfind("events", 0) == 0 || name.rfind("Events", 0) == 0) {
      near.push_back(e.path().string());
    } else if (ext == ".jsonl" || ext == ".ndjson") {
      other.push_back(e.path().string());
    }
  }
  std::sort(near.begin(), near.end());
  std::sort(other.begin(), other.end());
  if (!near.empty()) return near.front();
  return other.empty() ? "" : other.front();
}

}  // namespace

int run_command(const CommandArgs& args) {
  StopSignals signals;
  if (args.positional.size() > 1) throw UsageError{"run takes one directory"};
  if (args.positional.empty() && (!args.has("flows") || !args.has("events"))) {
    throw UsageError{"run needs DIR, or --flows and --events"};
  }
  const std::string format = args.get("format", "table");
  if (format != "table" && format != "json") throw UsageError{"--format must be table or json"};
  const TableFilter filter = table_filter(args);
  // `--out -`: the records go to standard output, as JSON Lines for a pipe, and the table
  // to standard error; a document would mix with them.
  const bool records_to_stdout = args.has("out") && args.get("out") == "-";
  if (records_to_stdout && format == "json") {
    throw UsageError{"--out - and --format json would both write to standard output: name a file for --out"};
  }

  // The project as the library opens it (runtime/project.h); --flows, --events and
  // --config name its files explicitly.
  ProjectFiles files;
  if (!args.positional.empty()) {
    Result<ProjectFiles> found = project_files(args.positional[0]);
    if (!found) throw UsageError{found.message()};
    files = std::move(*found);
  }
  if (!args.positional.empty() && files.events.empty() && !args.has("events")) {
    // No events file: the run only loads the definitions. Say so, and point at a file that
    // looks like one.
    std::cerr << "flowrt run: " << args.positional[0] << " has no events.jsonl, so no events are applied";
    if (const std::string look_alike = events_look_alike(args.positional[0]); !look_alike.empty()) {
      std::cerr << "; did you mean " << look_alike << "? (name it with --events " << look_alike << ")";
    }
    std::cerr << "\n";
  }
  files.flows = args.get("flows", files.flows);
  files.events = args.get("events", files.events);
  // `-` is standard input, as for most commands that read a file; it is read through its
  // name on Linux, so errors name /dev/stdin and its lines.
  if (files.events == "-") files.events = "/dev/stdin";
  files.config = args.get("config", files.config);

  // Errors are printed once on stderr; --format json lists them in its one document
  // whatever went wrong, the table at its end.
  std::vector<RunError> errors;
  auto fail = [&](const Diagnostics& diags, size_t max_file_bytes) {
    errors = run_errors(diags, max_file_bytes);
    for (const RunError& e : errors) std::cerr << e.describe() << "\n";
    if (format == "json") {
      std::cout << Value::object({{"contexts", Value::array({})},
                                  {"skipped", Value::array({})},
                                  {"records", Value::object({})},
                                  {"locks", Value::array({})},
                                  {"errors", errors_value(errors)},
                                  {"dropped_contexts", Value(0)},
                                  {"dropped_skipped", Value(0)}})
                       .to_json()
                << "\n";
    }
    return 1;
  };

  const std::string log_level = args.get("log-level");
  if (!log_level.empty() && !set_engine_log_level(log_level)) {
    throw UsageError{"--log-level must be off, error, warn, info or debug"};
  }
  if (args.has("out") && !records_to_stdout) {
    if (const std::string why = why_out_is_not_writable(args.get("out")); !why.empty()) {
      Diagnostics diags;
      diags.add(args.get("out"), "", "cannot write the context records: " + why + " (nothing was run)");
      return fail(diags, EngineProperties{}.max_definition_file_bytes);
    }
  }
  Result<Project, Diagnostics> project = read_project(std::move(files));
  // Only the config is read yet: one with an error at a pointer was read within its own,
  // smaller limit, and a config refused for its size has no line to look up.
  if (!project) return fail(project.error(), EngineProperties{}.max_definition_file_bytes);
  project->options.log_level = log_level;
  if (args.has("data")) {
    // State kept in a SQLite file (or a PostgreSQL database: a postgresql:// URL) that the
    // next run goes on from (docs/DURABILITY.md).
    if (args.get("data").empty()) throw UsageError{"--data needs a file name (or a postgresql:// URL)"};
    use_data_store(args.get("data"), &project->options);
  }
  Result<std::unique_ptr<Engine>, Diagnostics> opened = open_project(*project);
  if (!opened) return fail(opened.error(), project->options.properties.max_definition_file_bytes);
  Engine& engine = **opened;
  signals.watch(&engine);

  Harness harness(engine);
  const std::string& events = project->files.events;
  Status ran = events.empty() ? Status::ok() : harness.run_file(events);
  if (!ran) errors.push_back(run_error(ran.message(), events));
  const int stop_signal = g_stop_signal.load();
  if (stop_signal != 0) {
    // Stopped: every context that has not ended is cancelled, which releases its locks.
    const size_t cancelled = engine.shutdown();
    errors.push_back(run_error(std::string("stopped by ") + (stop_signal == SIGINT ? "SIGINT" : "SIGTERM") + ": " +
                                   std::to_string(cancelled) + " contexts cancelled",
                               ""));
  }

  if (records_to_stdout) {
    for (const ContextRecord& c : engine.contexts()) std::cout << c.value().to_json() << "\n";
  } else if (args.has("out")) {
    const std::string path = args.get("out");
    errno = 0;
    std::ofstream out(path);
    if (out) {
      for (const ContextRecord& c : engine.contexts()) out << c.value().to_json() << "\n";
      out.close();  // a full disk shows here, when the buffer is written
    }
    if (!out) {
      const std::string why = errno != 0 ? std::string(": ") + std::strerror(errno) : std::string();
      errors.push_back(RunError{path, 0, "", false, "cannot write the context records" + why});
    }
  }
  if (format == "json") {
    const Value document = engine.document();
    std::vector<Member> doc;
    for (const auto& m : document.members()) {
      doc.push_back(Member{m.key, m.key.as_string() == "errors" ? errors_value(errors) : m.value});
    }
    std::cout << Value::object(std::move(doc)).to_json() << "\n";
  } else {
    std::vector<std::string> lines;
    for (const RunError& e : errors) lines.push_back(e.describe());
    print_table(engine, lines, records_to_stdout ? std::cerr : std::cout, filter);
  }
  std::cout.flush();
  if (!std::cout) {
    std::cerr << "flowrt run: cannot write the output to stdout\n";
    return 1;
  }
  if (!errors.empty()) {
    // The table ends with its error lines; the document's are for programs, so people get
    // them on stderr too.
    if (format == "json") {
      for (const RunError& e : errors) std::cerr << e.describe() << "\n";
    }
    return stop_signal != 0 ? 128 + stop_signal : 1;
  }
  return 0;
}

}  // namespace flowrt::cli
