// The seeded simulation of the whole engine (driver.h), in three variants, each split into
// parts that ctest runs in parallel. Each part runs its share of the seeds and then
// asserts that what the generator is for happened at least once in that share.
//
//   simulation_test                              every part, the default counts for this build
//   simulation_test --seeds 100000               the long mode: that many seeds per variant
//   simulation_test --variant threads --seed 12  just seed 12 of that variant: the replay
//                                                command a failure prints
//   FLOWRT_SIM_FIRST=5000                        start at another seed than 1
//   FLOWRT_SIM_VERBOSE=1                         print each seed's operations and definitions
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/simulation/driver.h"

#ifndef FLOWRT_SIM_DEFAULT_SEEDS
#define FLOWRT_SIM_DEFAULT_SEEDS 1000
#endif
#ifndef FLOWRT_SIM_THREAD_SEEDS
#define FLOWRT_SIM_THREAD_SEEDS 200
#endif
#ifndef FLOWRT_SIM_REAL_CLOCK_SEEDS
#define FLOWRT_SIM_REAL_CLOCK_SEEDS 20
#endif

namespace flowrt::sim {
namespace {

#ifndef FLOWRT_SIM_PARTS
#define FLOWRT_SIM_PARTS 4
#endif
#ifndef FLOWRT_SIM_SIMULATED_PARTS
#define FLOWRT_SIM_SIMULATED_PARTS FLOWRT_SIM_PARTS
#endif

constexpr int kSimulatedParts = FLOWRT_SIM_SIMULATED_PARTS;
constexpr int kThreadParts = FLOWRT_SIM_PARTS;
constexpr int kRealClockParts = 1;

std::string g_binary = "simulation_test";  // absolute path of this executable, for the replay command

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

std::string env_str(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// Runs part `part` of `parts` of the variant's seeds; the coverage of what ran.
Coverage run_part(Variant variant, int part, int parts, uint64_t default_seeds) {
  Coverage cov;
  // FLOWRT_SIM_PARTS=P splits the seeds into P shares instead (parts past P run none):
  // with P=1, part 0 runs them all, as a build with one part would.
  if (const uint64_t p = env_u64("FLOWRT_SIM_PARTS", 0); p > 0) {
    parts = static_cast<int>(p);
    if (part >= parts) return cov;
  }
  uint64_t first = env_u64("FLOWRT_SIM_FIRST", 1);
  uint64_t n = env_u64("FLOWRT_SIM_SEEDS", default_seeds);
  const std::string only = env_str("FLOWRT_SIM_SEED");
  if (!only.empty()) {
    const std::string want = env_str("FLOWRT_SIM_VARIANT");
    if (part != 0 || (want.empty() ? "simulated" : want) != variant_name(variant)) return cov;
    first = std::strtoull(only.c_str(), nullptr, 10);
    n = 1;
  }
  uint64_t lo = first + n * static_cast<uint64_t>(part) / static_cast<uint64_t>(parts);
  uint64_t hi = first + n * static_cast<uint64_t>(part + 1) / static_cast<uint64_t>(parts);
  if (!only.empty()) hi = (lo = first) + 1;
  const bool verbose = std::getenv("FLOWRT_SIM_VERBOSE") != nullptr;
  size_t failures = 0;
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t seed = lo; seed < hi && failures < 3; ++seed) {
    const auto seed_start = std::chrono::steady_clock::now();
    const std::string problem = check_seed(seed, variant, g_binary, verbose, &cov);
    const double seed_secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - seed_start).count();
    if (seed_secs > 5) std::printf("[ simulation ] %s seed %llu took %.1f s\n", variant_name(variant), static_cast<unsigned long long>(seed), seed_secs);
    if (!problem.empty()) {
      ++failures;
      ADD_FAILURE() << problem;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ simulation ] %s seeds %llu..%llu: %s\n[ simulation ] %.1f s, %.1f ms a seed\n", variant_name(variant),
              static_cast<unsigned long long>(lo), static_cast<unsigned long long>(hi - 1), cov.describe().c_str(), secs,
              hi > lo ? 1000 * secs / static_cast<double>(hi - lo) : 0.0);
  return cov;
}

bool one_seed() { return !env_str("FLOWRT_SIM_SEED").empty(); }

// What every share of seeds must have reached, whatever the variant.
void expect_common_coverage(const Coverage& cov) {
  EXPECT_GT(cov.lock_waits, 0u) << "the generator never made a context wait for a lock";
  EXPECT_GT(cov.increments, 0u) << "no counter was ever incremented";
  EXPECT_GT(cov.skipped.count("direct_recursion"), 0u) << "no start was skipped for direct recursion";
  EXPECT_GT(cov.skipped.count("indirect_recursion_limit"), 0u) << "the indirect recursion limit was never hit";
  EXPECT_GT(cov.skipped.count("run_once"), 0u) << "no start was skipped by run: once";
  EXPECT_GT(cov.skipped.count("already_running"), 0u) << "no start was skipped as already_running";
  EXPECT_GT(cov.deadlocks, 0u) << "no deadlock was refused";
  EXPECT_GT(cov.lease_expiries, 0u) << "no lease expired";
  EXPECT_GT(cov.lock_lost, 0u) << "no write while_holding was refused with lock_lost";
  EXPECT_GT(cov.lock_timeouts, 0u) << "no lock request gave up";
  EXPECT_GT(cov.condition_met, 0u) << "no wait_for_condition was met";
  EXPECT_GT(cov.wait_timeouts, 0u) << "no wait_for_condition timed out";
  EXPECT_GT(cov.of("schedule ticks"), 0u) << "no schedule fired";
  EXPECT_GT(cov.of("subflow calls skipped (direct recursion)"), 0u) << "no subflow call skipped itself";
  EXPECT_GT(cov.of("subflow calls past indirect_recursion_limit"), 0u) << "sf_a and sf_b never hit the recursion limit";
  EXPECT_GT(cov.of("versions 2 run"), 0u) << "no second version of a definition ever ran";
  EXPECT_GT(cov.of("branches decided"), 0u) << "no if / else_if branch was decided";
  EXPECT_GT(cov.of("for_each past max_iterations"), 0u) << "no for_each passed max_iterations";
  EXPECT_GT(cov.of("custom action failures"), 0u) << "no custom action threw";
}

class SimulatedSeeds : public ::testing::TestWithParam<int> {};
class ThreadSeeds : public ::testing::TestWithParam<int> {};
class RealClockSeeds : public ::testing::TestWithParam<int> {};

TEST_P(SimulatedSeeds, KeepEveryInvariant_AndReplayExactly) {
  const Coverage cov = run_part(Variant::kSimulated, GetParam(), kSimulatedParts, FLOWRT_SIM_DEFAULT_SEEDS);
  if (one_seed() || HasFailure() || cov.seeds == 0) return;
  expect_common_coverage(cov);
  EXPECT_GT(cov.of("quota errors"), 0u) << "no custom action ran past max_run_time";
}

TEST_P(ThreadSeeds, KeepEveryInvariant) {
  const Coverage cov = run_part(Variant::kThreads, GetParam(), kThreadParts, FLOWRT_SIM_THREAD_SEEDS);
  if (one_seed() || HasFailure() || cov.seeds == 0) return;
  expect_common_coverage(cov);
  EXPECT_GT(cov.of("watchdog give-ups"), 0u) << "the watchdog never gave up on a custom action";
}

TEST_P(RealClockSeeds, KeepEveryInvariant) {
  const Coverage cov = run_part(Variant::kRealClock, GetParam(), kRealClockParts, FLOWRT_SIM_REAL_CLOCK_SEEDS);
  if (one_seed() || HasFailure() || cov.seeds == 0) return;
  EXPECT_GT(cov.lease_expiries, 0u) << "no lease expired on the real clock";
  EXPECT_GT(cov.lock_timeouts, 0u) << "no lock request gave up on the real clock";
  EXPECT_GT(cov.lock_lost, 0u) << "no write while_holding was refused with lock_lost";
}

INSTANTIATE_TEST_SUITE_P(Part, SimulatedSeeds, ::testing::Range(0, kSimulatedParts));
INSTANTIATE_TEST_SUITE_P(Part, ThreadSeeds, ::testing::Range(0, kThreadParts));
INSTANTIATE_TEST_SUITE_P(Part, RealClockSeeds, ::testing::Range(0, kRealClockParts));

}  // namespace
}  // namespace flowrt::sim

int main(int argc, char** argv) {
  // --seeds N (the long mode) is FLOWRT_SIM_SEEDS=N; --seed S is FLOWRT_SIM_SEED=S;
  // --variant V is FLOWRT_SIM_VARIANT=V (simulated, threads, real-clock).
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    std::string value;
    const char* var = nullptr;
    for (const auto& [flag, env] : {std::pair{"--seeds", "FLOWRT_SIM_SEEDS"}, std::pair{"--seed", "FLOWRT_SIM_SEED"},
                                    std::pair{"--variant", "FLOWRT_SIM_VARIANT"}}) {
      if (a == flag && i + 1 < argc) {
        var = env;
        value = argv[++i];
      } else if (a.rfind(std::string(flag) + "=", 0) == 0) {
        var = env;
        value = a.substr(std::strlen(flag) + 1);
      }
    }
    if (var) {
      setenv(var, value.c_str(), 1);
      continue;
    }
    args.push_back(argv[i]);
  }
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  flowrt::sim::g_binary = !ec ? self.string() : (argc > 0 ? argv[0] : "simulation_test");
  int n = static_cast<int>(args.size());
  args.push_back(nullptr);  // argv[argc] is null; InitGoogleTest moves it when it removes a flag
  ::testing::InitGoogleTest(&n, args.data());
  return RUN_ALL_TESTS();
}
