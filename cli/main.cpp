// flowrt: the command line (SPEC section 12). The only catch-all in the project.
//
// CLI11 reads the command line: subcommands, per-command --help, --version, "--" ending
// the options, --name=value and short options. A mistyped command or option is reported
// here, with the nearest known name ("did you mean"), which CLI11 does not offer.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "cli/commands.h"

#ifndef FLOWRT_VERSION
#error "FLOWRT_VERSION is set by cli/CMakeLists.txt from the CMake project version"
#endif

namespace {

constexpr const char* kUsage = R"(usage:
  flowrt run DIR [--format|-f table|json] [--out|-o FILE] [--log-level off|error|warn|info|debug]
                 [--events FILE] [--flow ID] [--status STATUS] [--data FILE]
  flowrt run --flows DIR --events FILE [--config|-c FILE] [--format|-f table|json] [--out|-o FILE] [--data FILE]
  flowrt inspect --data FILE [--flow ID] [--status STATUS] [--format|-f table|json]
  flowrt serve DIR [--listen HOST:PORT] [--data FILE] [--io-threads N] [--log-level LEVEL]
                   [--node NAME [--lease-ms MS] [--forward-timeout-ms MS] [--advertise HOST[:PORT]]]
  flowrt validate DIR | PATH...
  flowrt plan PATH... --flow ID
  flowrt bench [--workload triage|fanout|events|locks|compile|recovery] [--events N] [--workers K] [--rate R [--producer-runs]] [--clients N [--in-flight N]] [--max-queued N]
               [--retention N] [--store memory|sqlite|postgresql --data NEWFILE|URL [--durability full|normal|off]] [--json]
  flowrt COMMAND --help     what COMMAND takes
  flowrt --version
"--" ends the options: every word after it is a DIR or PATH.
exit codes: 0 ran, 1 bad definitions, events or config, 2 bad usage,
  130 / 143 run stopped by SIGINT / SIGTERM (contexts not ended are cancelled; what ran is printed)
  3 serve --node lost the cluster's lead (another node took over; start it again to rejoin)
  70 an internal error of flowrt's (or out of memory): what it was goes to stderr
)";

// An exception that reached main: a fault of flowrt's, not of what it was given. Apart from
// 3 (serve --node: the lead was lost, kLostLeadExit), so that a supervisor tells them apart;
// 70 is sysexits' EX_SOFTWARE.
constexpr int kInternalErrorExit = 70;

const std::vector<std::string> kCommands = {"run", "validate", "plan", "bench", "inspect", "serve", "help"};

// The optimal string alignment distance: insertions, deletions, substitutions and swaps
// of two neighbouring characters ("rnu" is one edit from "run").
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::string without_dashes(const std::string& s) { return s.substr(std::min(s.find_first_not_of('-'), s.size())); }

// The known name nearest to `word` (dashes aside), or "" when none is near enough to be a
// likely typo: at most a third of the word's letters (one for short words) differ, and
// never all of them (so "-x" suggests no "-h").
std::string nearest(const std::string& word, const std::vector<std::string>& known) {
  const std::string w = without_dashes(word);
  std::string best;
  size_t best_distance = 0;
  for (const std::string& k : known) {
    const size_t d = edit_distance(w, without_dashes(k));
    if (best.empty() || d < best_distance) {
      best = k;
      best_distance = d;
    }
  }
  const size_t limit = std::max<size_t>(1, w.size() / 3);
  return !best.empty() && best_distance <= limit && best_distance < w.size() ? best : "";
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& known) {
  const std::string near = nearest(word, known);
  return near.empty() ? "" : " (did you mean '" + near + "'?)";
}

// Every spelling of every option of `app`: --long and -s names.
std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : o->get_snames()) names.push_back("-" + s);
  }
  return names;
}

struct Command {
  CLI::App* app = nullptr;
  flowrt::cli::CommandArgs args;
  std::vector<std::pair<std::string, CLI::Option*>> options;  // long name, option
};

// A subcommand whose positional words go to c.args.positional.
CLI::App* add_command(CLI::App& top, Command& c, const std::string& name, const std::string& about,
                      const std::string& positional, const std::string& positional_about) {
  c.app = top.add_subcommand(name, about);
  c.app->allow_extras();  // unknown options are reported below, with a suggestion
  c.app->add_option(positional, c.args.positional, positional_about)->type_name("");
  return c.app;
}

// An option that takes a value: `spelling` as CLI11 reads it ("-o,--out"), `long_name` its
// key in c.args.options, `value` its value's name in --help.
void add_value(Command& c, const std::string& spelling, const std::string& long_name, const std::string& value,
               const std::string& about) {
  CLI::Option* o = c.app->add_option(spelling, about)->type_name(value);  // read back by collect()
  c.options.emplace_back(long_name, o);
}

// After the parse: the options given, by long name, into c.args.
void collect(Command& c) {
  for (const auto& [name, option] : c.options) {
    if (option->count() > 0) c.args.options[name] = option->as<std::string>();
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string command = args[0];
  if (command.rfind("-", 0) != 0 && std::find(kCommands.begin(), kCommands.end(), command) == kCommands.end()) {
    std::cerr << "flowrt: unknown command '" << command << "'" << did_you_mean(command, kCommands) << "\n" << kUsage;
    return 2;
  }

  CLI::App top{"flowrt: a flow runtime", "flowrt"};
  top.set_help_flag("-h,--help", "print the usage");
  top.set_version_flag("--version", std::string("flowrt ") + FLOWRT_VERSION, "print the version");
  top.require_subcommand(1);

  Command run, validate, plan, bench, inspect, serve;
  add_command(top, run, "run", "load definitions, apply the events file on a virtual clock, print contexts", "DIR",
              "a project: flows/, events.jsonl, optionally config.json");
  add_value(run, "--flows", "flows", "DIR", "the definitions (a file or directory; with --events, instead of DIR)");
  add_value(run, "--events", "events", "FILE", "the events file (JSON Lines; - for standard input)");
  add_value(run, "-c,--config", "config", "FILE", "the config file (config.json)");
  add_value(run, "-f,--format", "format", "table|json", "a table of contexts (the default) or one JSON document");
  add_value(run, "-o,--out", "out", "FILE", "also write the context records to FILE, as JSON Lines (-: to stdout, the table to stderr)");
  add_value(run, "--log-level", "log-level", "LEVEL", "the engine's log on stderr: off, error, warn (the default), info or debug");
  add_value(run, "--flow", "flow", "ID", "the table lists the contexts of this flow only");
  add_value(run, "--status", "status", "STATUS", "the table lists the contexts with this status only");
  add_value(run, "--data", "data", "FILE",
            "keep the state in this SQLite file (created when missing), or the PostgreSQL database of a "
            "postgresql:// URL; a later run goes on from it");

  add_command(top, validate, "validate", "compile every definition and print every error, without running",
              "PATH", "a project DIR, or definition files or directories of them");

  add_command(top, plan, "plan", "print the compiled plan of one flow", "PATH", "definition files or directories");
  add_value(plan, "--flow", "flow", "ID", "the flow whose plan to print (required)");

  bench.app = top.add_subcommand("bench", "the throughput benchmark (docs/PERFORMANCE.md)");
  bench.app->allow_extras();  // it takes no positional words: bench_command says so
  add_value(bench, "--workload", "workload", "NAME", "triage (the default), fanout, events, locks, compile or recovery");
  add_value(bench, "--events", "events", "N", "events to apply (default 1000000; 100000 for compile)");
  add_value(bench, "--workers", "workers", "K", "worker threads (default 2)");
  add_value(bench, "--rate", "rate", "R", "events per second (default: as fast as possible)");
  add_value(bench, "--clients", "clients", "N", "threads committing the events at once (default 1)");
  add_value(bench, "--in-flight", "in-flight", "N",
            "with --store sqlite or postgresql: commits each client keeps in flight, waiting for the oldest to be "
            "durable only when N are not yet, as a server answers its requests (default: each commit waits for its own)");
  add_value(bench, "--max-queued", "max-queued", "N",
            "a closed loop: the clients wait while N contexts wait to start (default 0: as fast as they can commit)");
  add_value(bench, "--retention", "retention", "N", "context_retention, and with --store sqlite history_retention's count (default 0: keep every record)");
  add_value(bench, "--store", "store", "KIND", "memory (the default), sqlite or postgresql");
  add_value(bench, "--data", "data", "NEWFILE",
            "the sqlite store's file (must not exist), or the postgresql store's postgresql:// URL (an empty schema)");
  add_value(bench, "--durability", "durability", "MODE", "full, normal (the default) or off");
  inspect.app = top.add_subcommand("inspect", "what a data file holds: contexts, queued events, locks, the last recovery");
  inspect.app->allow_extras();  // it takes no positional words: inspect_command says so
  add_value(inspect, "--data", "data", "FILE", "the data file, or a postgresql:// URL (read only)");
  add_value(inspect, "--flow", "flow", "ID", "the contexts of this flow only");
  add_value(inspect, "--status", "status", "STATUS", "the contexts with this status only");
  add_value(inspect, "-f,--format", "format", "table|json", "a table (the default) or one JSON document");

  add_command(top, serve, "serve", "run the project as a service: the HTTP API and the web viewer (docs/API.md)", "DIR",
              "a project: flows/, optionally config.json (its \"server\" section: tokens, limits)");
  add_value(serve, "--listen", "listen", "HOST:PORT", "where to listen (default 127.0.0.1:8480; port 0: any free port)");
  add_value(serve, "--data", "data", "FILE",
            "keep the state in this SQLite file or postgresql:// database (default: the config's store, else "
            "DIR/flowrt.db)");
  add_value(serve, "--io-threads", "io-threads", "N", "threads that read and answer requests (default 2)");
  add_value(serve, "--log-level", "log-level", "LEVEL", "the engine's log on stderr: off, error, warn, info (the default) or debug");
  add_value(serve, "--node", "node", "NAME",
            "run as node NAME of a cluster on the postgresql store --data names (docs/SCALING.md)");
  add_value(serve, "--lease-ms", "lease-ms", "MS", "with --node: how long a node's lease lasts past each heartbeat (3000)");
  add_value(serve, "--forward-timeout-ms", "forward-timeout-ms", "MS",
            "with --node: how long a request forwarded to the leader waits for its answer (30000)");
  add_value(serve, "--advertise", "advertise", "HOST[:PORT]",
            "with --node: where the other nodes and clients reach this node (default: the --listen address, "
            "which must then not be 0.0.0.0 or ::)");

  bool json = false;
  CLI::Option* json_flag = bench.app->add_flag("--json", json, "one JSON document, not a table");
  bool producer_runs = false;
  CLI::Option* producer_runs_flag = bench.app->add_flag(
      "--producer-runs", producer_runs,
      "with --rate: the producer runs queued contexts while it is ahead of its pace, instead of sleeping");

  // "--" ends the options: what follows it are positional words, even those that begin with
  // '-'. CLI11 reads the words before it; those after it are the command's, in order.
  const auto dashes = std::find(args.begin() + 1, args.end(), std::string("--"));
  const std::vector<std::string> before_dashes(args.begin(), dashes);
  const std::vector<std::string> after_dashes(dashes == args.end() ? args.end() : dashes + 1, args.end());

  try {
    top.parse(std::vector<std::string>(before_dashes.rbegin(), before_dashes.rend()));  // CLI11 takes them last first
  } catch (const CLI::CallForHelp& e) {
    return top.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return top.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return top.exit(e);
  } catch (const CLI::ParseError& e) {
    const std::string message = e.what();
    if (command.rfind("-", 0) == 0) {
      std::cerr << "flowrt: unknown option " << command << did_you_mean(command, option_names(top)) << "\n" << kUsage;
      return 2;
    }
    std::cerr << "flowrt " << command << ": " << message << "\n" << kUsage;
    return 2;
  }

  Command* chosen = nullptr;
  for (Command* c : {&run, &validate, &plan, &bench, &inspect, &serve}) {
    if (c->app->parsed()) chosen = c;
  }
  try {
    // What CLI11 left: unknown options (reported with the nearest known one), and words.
    for (const std::string& extra : chosen->app->remaining()) {
      if (extra.rfind("-", 0) == 0 && extra.size() > 1) {
        const std::string name = extra.substr(0, extra.find('='));
        throw flowrt::cli::UsageError{"unknown option " + name + did_you_mean(name, option_names(*chosen->app))};
      }
      chosen->args.positional.push_back(extra);
    }
    chosen->args.positional.insert(chosen->args.positional.end(), after_dashes.begin(), after_dashes.end());
    collect(*chosen);
    if (json_flag->count() > 1) throw flowrt::cli::UsageError{"option --json given twice"};
    if (chosen == &bench && json_flag->count() > 0) bench.args.options["json"] = json ? "true" : "false";
    if (producer_runs_flag->count() > 1) throw flowrt::cli::UsageError{"option --producer-runs given twice"};
    if (chosen == &bench && producer_runs) bench.args.options["producer-runs"] = "true";
    if (chosen == &run) return flowrt::cli::run_command(run.args);
    if (chosen == &validate) return flowrt::cli::validate_command(validate.args);
    if (chosen == &plan) return flowrt::cli::plan_command(plan.args);
    if (chosen == &inspect) return flowrt::cli::inspect_command(inspect.args);
    if (chosen == &serve) return flowrt::cli::serve_command(serve.args);
    return flowrt::cli::bench_command(bench.args);
  } catch (const flowrt::cli::UsageError& e) {
    std::cerr << "flowrt " << command << ": " << e.message << "\n" << kUsage;
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "flowrt " << command << ": out of memory\n";
    return kInternalErrorExit;
  } catch (const std::exception& e) {
    std::cerr << "flowrt " << command << ": internal error: " << e.what() << "\n";
    return kInternalErrorExit;
  }
}
