// The simulation driver. Contract: run_seed(seed) builds the seed's scenario, runs it on
// an Engine in simulation mode (virtual clock, seeded interleaving of up to
// scenario.workers contexts) with the seed's traffic, and checks every invariant after
// every operation, advance and settle, and what must hold at every instant after every
// step a context takes, stopping at the first violation. check_seed runs
// a seed twice and also compares the two runs (the same seed must replay exactly);
// it returns "" when all held, else a report that starts with the replay command.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "plans/value.h"
#include "tests/simulation/snapshot.h"

namespace flowrt::sim {

// How often the interesting things happened over the seeds run: a generator that never
// reaches them tests nothing.
struct Coverage {
  size_t seeds = 0, operations = 0, steps_checked = 0, contexts = 0, completed = 0, errors = 0, cancelled = 0;
  size_t lock_waits = 0, lock_timeouts = 0, deadlocks = 0, lease_expiries = 0, lock_lost = 0;
  size_t wait_timeouts = 0, condition_met = 0;
  size_t increments = 0, max_contexts = 0;
  std::map<std::string, size_t> skipped;
  void count(const Snapshot& s);
  std::string describe() const;
};

struct SeedRun {
  std::string document;  // the final `flowrt run` document, timing fields normalised
  Violations violations;
  std::vector<std::string> log;  // the operations applied, in order
  std::string definitions;
  size_t steps_checked = 0;  // steps after which the between-steps checks ran
};

SeedRun run_seed(uint64_t seed, Coverage* cov);

// The `flowrt run` document with the fields that measure real time (runtime_ms) zeroed,
// as JSON: two runs of one seed must give the same text.
std::string normalised_document(const Value& document);

// Runs `seed` twice; "" when every invariant held and the runs agree. `binary` is the
// path printed in the replay command.
std::string check_seed(uint64_t seed, const std::string& binary, bool verbose, Coverage* cov);

}  // namespace flowrt::sim
