// The seeded simulation of the whole engine (driver.h): seeds first..first+N-1, each run
// twice, every invariant checked after every operation, advance and settle.
//
//   simulation_test                    the default count for this build (FLOWRT_SIM_DEFAULT_SEEDS)
//   simulation_test --seeds 100000     the long mode (same as FLOWRT_SIM_SEEDS=100000)
//   simulation_test --seed 1234        just seed 1234: the replay command a failure prints
//                                      (same as FLOWRT_SIM_SEED=1234)
//   FLOWRT_SIM_FIRST=5000              start at another seed than 1
//   FLOWRT_SIM_VERBOSE=1               print each seed's operations and definitions
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

namespace flowrt::sim {
namespace {

std::string g_binary = "simulation_test";  // absolute path of this executable, for the replay command

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

TEST(SimulationTest, RandomSeeds_KeepEveryInvariant_AndReplayExactly) {
  uint64_t first = env_u64("FLOWRT_SIM_FIRST", 1);
  uint64_t n = env_u64("FLOWRT_SIM_SEEDS", FLOWRT_SIM_DEFAULT_SEEDS);
  if (const char* one = std::getenv("FLOWRT_SIM_SEED"); one && *one) {
    first = std::strtoull(one, nullptr, 10);
    n = 1;
  }
  const bool verbose = std::getenv("FLOWRT_SIM_VERBOSE") != nullptr;
  Coverage cov;
  size_t failures = 0;
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t seed = first; seed < first + n && failures < 3; ++seed) {
    const std::string problem = check_seed(seed, g_binary, verbose, &cov);
    if (!problem.empty()) {
      ++failures;
      ADD_FAILURE() << problem;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ simulation ] seeds %llu..%llu: %s\n[ simulation ] %.1f s (each seed run twice)\n",
              static_cast<unsigned long long>(first), static_cast<unsigned long long>(first + n - 1),
              cov.describe().c_str(), secs);
  if (n >= 100 && failures == 0) {
    EXPECT_GT(cov.lock_waits, 0u) << "the generator never made a context wait for a lock";
    EXPECT_GT(cov.increments, 0u) << "no counter was ever incremented";
    EXPECT_GT(cov.skipped.count("direct_recursion"), 0u) << "no start was skipped for direct recursion";
    EXPECT_GT(cov.skipped.count("indirect_recursion_limit"), 0u) << "the indirect recursion limit was never hit";
    EXPECT_GT(cov.condition_met + cov.wait_timeouts, 0u) << "no wait_for_condition ever ended";
  }
}

}  // namespace
}  // namespace flowrt::sim

int main(int argc, char** argv) {
  // --seeds N (the long mode) is FLOWRT_SIM_SEEDS=N; --seed S is FLOWRT_SIM_SEED=S.
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    const bool seeds = std::strcmp(argv[i], "--seeds") == 0, seed = std::strcmp(argv[i], "--seed") == 0;
    if ((seeds || seed) && i + 1 < argc) {
      setenv(seeds ? "FLOWRT_SIM_SEEDS" : "FLOWRT_SIM_SEED", argv[i + 1], 1);
      ++i;
      continue;
    }
    if (std::strncmp(argv[i], "--seeds=", 8) == 0 || std::strncmp(argv[i], "--seed=", 7) == 0) {
      const bool many = argv[i][6] == 's';
      setenv(many ? "FLOWRT_SIM_SEEDS" : "FLOWRT_SIM_SEED", std::strchr(argv[i], '=') + 1, 1);
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
