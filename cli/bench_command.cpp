// flowrt bench: the throughput benchmark (docs/PERFORMANCE.md).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "bench/workloads/workloads.h"
#include "cli/commands.h"
#include "plans/value.h"
#include "store/store.h"

namespace flowrt::cli {
namespace {

// The option `name` as an integer from 1 to `max`, or `fallback` when it is not given.
// Anything else (a sign, a fraction, digits beyond uint64) is bad usage naming the range.
uint64_t positive(const CommandArgs& args, const std::string& name, uint64_t fallback, uint64_t max) {
  if (!args.has(name)) return fallback;
  const std::string text = args.get(name);
  const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  errno = 0;
  const unsigned long long v = digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
  if (!digits || errno == ERANGE || v == 0 || v > max) {
    throw UsageError{"--" + name + " must be an integer from 1 to " + std::to_string(max)};
  }
  return v;
}

// The most operations (and the largest rate, retention and backlog) a run may ask for: the
// harness builds its operations before the clock starts.
constexpr uint64_t kMaxEvents = 1000000000;

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

int bench_command(const CommandArgs& args) {
  if (!args.positional.empty()) throw UsageError{"bench takes options only"};
  bench::BenchOptions o;
  o.workload = args.get("workload", "triage");
  if (o.workload != "triage" && o.workload != "fanout" && o.workload != "events" && o.workload != "locks" &&
      o.workload != "compile" && o.workload != "recovery") {
    throw UsageError{"--workload must be triage, fanout, events, locks, compile or recovery"};
  }
  o.events = positive(args, "events", o.workload == "compile" ? 100000 : 1000000, kMaxEvents);
  o.workers = static_cast<unsigned>(positive(args, "workers", 2, 256));
  o.rate = static_cast<double>(positive(args, "rate", 0, kMaxEvents));
  o.clients = static_cast<unsigned>(positive(args, "clients", 1, 1024));
  if (o.clients > 1 && o.rate > 0) throw UsageError{"--rate paces one client: leave out --clients"};
  if (args.has("in-flight")) {
    o.in_flight = static_cast<unsigned>(positive(args, "in-flight", 0, 65536));
  }
  o.producer_runs = args.has("producer-runs");
  if (o.producer_runs && o.rate <= 0) throw UsageError{"--producer-runs goes with --rate: without it the producer is never ahead"};
  o.retention = positive(args, "retention", 0, kMaxEvents);
  o.max_queued = positive(args, "max-queued", 0, kMaxEvents);
  o.store = args.get("store", !args.has("data")                   ? "memory"
                              : is_postgres_url(args.get("data")) ? "postgresql"
                                                                  : "sqlite");
  if (o.store != "memory" && o.store != "sqlite" && o.store != "postgresql") {
    throw UsageError{"--store must be memory, sqlite or postgresql"};
  }
  o.data_file = args.get("data");
  o.durability = args.get("durability", "normal");
  if (o.durability != "full" && o.durability != "normal" && o.durability != "off") {
    throw UsageError{"--durability must be full, normal or off"};
  }
  if (o.store == "sqlite") {
    if (o.data_file.empty()) throw UsageError{"--store sqlite needs --data FILE (a new file)"};
    // A benchmark measures a store from empty; it never takes over (or changes) a file's state.
    if (std::filesystem::exists(o.data_file)) throw UsageError{"--data " + o.data_file + " exists: give a new file"};
  } else if (o.store == "postgresql") {
    if (!is_postgres_url(o.data_file)) throw UsageError{"--store postgresql needs --data postgresql://... (an empty schema)"};
    // From empty too: a schema that holds a store already is refused (opening it read
    // only succeeds only then).
    StoreOptions existing;
    existing.kind = "postgresql";
    existing.url = o.data_file;
    existing.read_only = true;
    if (open_store(existing)) throw UsageError{"--data: that database schema holds a flowrt store already: give an empty one"};
  } else if (args.has("data")) {
    throw UsageError{"--data goes with --store sqlite or postgresql"};
  }
  if (o.workload == "recovery" && o.store != "sqlite") {
    throw UsageError{"--workload recovery needs --store sqlite --data NEWFILE (it measures opening a file)"};
  }
  if (o.in_flight > 0 && o.store == "memory") {
    throw UsageError{"--in-flight goes with --store sqlite or postgresql: a commit to the memory store has no durability to wait for"};
  }
  const std::string json = args.get("json", "false");
  if (isatty(STDERR_FILENO)) {
    o.progress = [](double done) { std::fprintf(stderr, "\r%5.1f%% committed", done * 100.0); };
  }
  bench::BenchResult r;
  try {
    r = bench::run_workload(o);
  } catch (const bench::StoreUnavailable& e) {
    if (o.progress) std::fprintf(stderr, "\r                  \r");
    std::cerr << "flowrt bench: " << e.what() << "\n";
    return 1;
  }
  if (o.progress) std::fprintf(stderr, "\r                  \r");

  if (json == "true") {
    std::vector<Member> extra;
    for (const auto& [name, v] : r.extra) extra.push_back(Member{Value(std::string_view(name)), Value(v)});
    std::vector<Member> m = {
        {Value("workload"), Value(std::string_view(r.workload))},
        {Value("store"), Value(std::string_view(r.store))},
        {Value("events"), Value(static_cast<long long>(r.events))},
        {Value("contexts"), Value(static_cast<long long>(r.contexts))},
        {Value("workers"), Value(r.workers)},
        {Value("clients"), Value(o.clients)},
        {Value("in_flight"), Value(o.in_flight)},
        {Value("seconds"), Value(r.seconds)},
        {Value("contexts_per_s"), Value(r.contexts_per_s)},
        {Value("cpu_us_per_context"), Value(r.cpu_us_per_context)},
        {Value("latency_us"), Value::object({{"p50", Value(r.p50_us)}, {"p99", Value(r.p99_us)}, {"p999", Value(r.p999_us)}})},
        {Value("peak_rss_bytes"), Value(static_cast<long long>(r.peak_rss_bytes))},
        {Value("bytes_per_context"), Value(r.bytes_per_context)},
    };
    for (Member& e : extra) m.push_back(std::move(e));
    std::cout << Value::object(std::move(m)).to_json() << "\n";
    return 0;
  }
  size_t width = 19;  // the labels' column, wide enough for every workload's own figures
  for (const auto& [name, v] : r.extra) width = std::max(width, name.size() + 1);
  auto row = [width](std::string label, const std::string& value) {
    label.resize(width, ' ');
    std::cout << label << value << "\n";
  };
  row("workload", r.workload);
  row("store", r.store);
  row("events", std::to_string(r.events));
  row("contexts", std::to_string(r.contexts));
  row("workers", std::to_string(r.workers));
  row("clients", std::to_string(o.clients) + (o.in_flight ? ", " + std::to_string(o.in_flight) + " commits in flight each" : ""));
  row("seconds", fixed(r.seconds, 3));
  row("contexts/s", fixed(r.contexts_per_s, 0));
  row("CPU per context", fixed(r.cpu_us_per_context, 2) + " us");
  row("latency p50", fixed(r.p50_us, 1) + " us");
  row("latency p99", fixed(r.p99_us, 1) + " us");
  row("latency p99.9", fixed(r.p999_us, 1) + " us");
  row("peak RSS", fixed(static_cast<double>(r.peak_rss_bytes) / (1 << 20), 1) + " MiB");
  row("bytes per context", fixed(r.bytes_per_context, 0));
  for (const auto& [name, v] : r.extra) row(name, fixed(v, v < 100 ? 2 : 0));
  return 0;
}

}  // namespace flowrt::cli
