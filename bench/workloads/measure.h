// Shared measuring helpers of the workloads. Internal to bench/workloads.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench/workloads/workloads.h"
#include "runtime/engine.h"

namespace flowrt::bench {

// The engine of a record workload: real clock, `o.workers` workers, latency stamped.
EngineOptions bench_engine_options(const BenchOptions& o);
// An engine with `options`, opened; StoreUnavailable when its store does not open.
std::unique_ptr<Engine> open_bench_engine(const EngineOptions& options);

// Percentiles of commit-to-completion latency over the engine's finished contexts.
void fill_latency(EngineCore& core, BenchResult* r);

// Paces a producer at `rate` per second (0 = no pacing).
class Pacer {
 public:
  explicit Pacer(double rate) : rate_(rate), start_(std::chrono::steady_clock::now()) {}
  void wait_for(uint64_t done);
  // When operation `done` falls due (the start, without pacing).
  std::chrono::steady_clock::time_point due(uint64_t done) const;

 private:
  double rate_;
  std::chrono::steady_clock::time_point start_;
};

double seconds_since(std::chrono::steady_clock::time_point t);

// Set-up steps of a workload; a failure is a broken benchmark, thrown as runtime_error.
void load_or_throw(Engine& engine, std::string_view text, const std::string& file);
void insert_or_throw(Engine& engine, std::string_view table, const Value& row);

// Inserts `rows` into `table` as fast as `o.rate` allows, settles, and fills the figures
// every record workload shares: seconds, contexts, contexts/s, CPU and memory per context,
// latency. The caller sets the workload name and any extra figures.
BenchResult drive_inserts(Engine& engine, std::string_view table, const std::vector<Value>& rows,
                          const BenchOptions& o);
// The same for any operation: `op(i)` commits operation i of `count`. Besides the shared
// figures it reports the steady state, from a fifth of the run to its end: resident
// memory grown and minor page faults taken, per context started meanwhile.
BenchResult drive(Engine& engine, uint64_t count, const std::function<void(uint64_t)>& op, const BenchOptions& o);
// CPU time (user + system) of the whole process so far, in seconds.
double process_cpu_seconds();

}  // namespace flowrt::bench
