// The `flowrt bench` workloads (docs/PERFORMANCE.md): each runs in process, on the real
// clock and the real worker pool, and reports throughput, latency percentiles (from an
// operation's commit to its context's completion) and memory.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace flowrt::bench {

struct BenchOptions {
  std::string workload = "triage";  // triage | fanout | events | locks | compile | recovery
  uint64_t events = 1000000;        // operations the harness commits
  unsigned workers = 2;
  double rate = 0;                  // operations per second to pace at; 0 = as fast as possible
  unsigned clients = 1;             // threads committing the operations at once (rate: one client only)
  // With a durable store: commits each client keeps in flight, as a server keeps its
  // requests' answers waiting (no thread per request): a client waits for its oldest
  // commit to be durable only when this many are not yet. 0: each commit waits for its
  // own durability before the client makes the next (a thread per client).
  unsigned in_flight = 0;
  // With rate: while ahead of its pace, the producer runs queued contexts
  // (Engine::run_queued_until) instead of sleeping.
  bool producer_runs = false;
  // A closed loop: a client waits while this many contexts wait to start (queued, or
  // written and not yet delivered); 0 = open loop, the producers run ahead of the workers.
  uint64_t max_queued = 0;
  uint64_t retention = 0;           // context_retention; with a durable store history_retention count (0: keep all)
  std::string store = "memory";     // memory | sqlite | postgresql (EngineOptions::store)
  std::string data_file;            // sqlite: a new file; postgresql: the URL of a schema with no store yet
  std::string durability = "normal";  // sqlite: full | normal | off
  // Called now and then with the share done (0..1), for progress output.
  std::function<void(double)> progress;
};

struct BenchResult {
  std::string workload;
  uint64_t events = 0;
  uint64_t contexts = 0;
  unsigned workers = 0;
  double seconds = 0;
  double contexts_per_s = 0;
  double cpu_us_per_context = 0;  // user + system time of all threads, per context
  double p50_us = 0, p99_us = 0, p999_us = 0;
  uint64_t peak_rss_bytes = 0;
  double bytes_per_context = 0;
  std::string store;               // where the state went: "memory", "sqlite (normal)"
  std::vector<std::pair<std::string, double>> extra;  // workload-specific figures
};

// Runs the workload `options` names. StoreUnavailable when its store does not open (a
// --data the user gave: their error, which flowrt bench tells as such); any other
// exception is a broken benchmark.
BenchResult run_workload(const BenchOptions& options);

// The store a workload was given does not open; what() is the store's message, naming it.
struct StoreUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Resident set size now, and its peak, in bytes (from /proc/self/status).
uint64_t rss_bytes();
uint64_t peak_rss_bytes();

}  // namespace flowrt::bench
