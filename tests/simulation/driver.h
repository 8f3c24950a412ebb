// The simulation driver. Contract: run_seed(seed, variant) builds the seed's scenario, runs
// it on an Engine with the seed's traffic and checks every invariant, stopping at the
// first violation:
//  - kSimulated: simulation mode (virtual clock, seeded interleaving of up to
//    scenario.workers contexts on the driving thread); the model and the stateless checks
//    after every operation, advance and settle, and what must hold at every instant after
//    every step a context takes;
//  - kThreads: 2-4 real workers on the virtual clock, with seeded perturbation at the
//    engine's perturbation points; the checks after every advance and settle (only then
//    is nothing running);
//  - kRealClock: real workers, the real clock and its timer thread (sim_real.h).
// check_seed runs a seed and returns "" when all held, else a report that starts with the
// replay command; in kSimulated it runs the seed twice and also compares the two runs'
// documents (the same seed must replay exactly); with real threads a run is not
// replayable byte for byte, so only the invariants are checked.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "plans/value.h"
#include "tests/simulation/commit_log.h"
#include "tests/simulation/generator.h"
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
  std::map<std::string, size_t> model;  // what the model decided (Model::counts)
  void count(const Snapshot& s);
  void add_model(const std::map<std::string, size_t>& counts);
  size_t of(const std::string& model_count) const;
  std::string describe() const;
};

struct SeedRun {
  std::string document;  // the final `flowrt run` document, timing fields normalised
  Violations violations;
  bool sabotaged = false;  // the Sabotage changed something
  std::vector<std::string> log;  // the operations applied, in order
  std::string definitions;
  size_t steps_checked = 0;  // steps after which the between-steps checks ran
};

// A deliberate break of a run, for the checker's own tests (checker_test.cpp): called at
// every checkpoint with the commits and the `flowrt run` document the checks are about to
// read, it may change them; it returns true when it did.
using Sabotage = std::function<bool(std::vector<CommitRecord>* commits, Value* document)>;

SeedRun run_seed(uint64_t seed, Variant variant, Coverage* cov, const Sabotage& sabotage = {});

// "" when two runs of one seed agree, else what differs (invariant f).
std::string compare_runs(const SeedRun& first, const SeedRun& second);

// The `flowrt run` document with the fields that measure real time (runtime_ms) zeroed,
// as JSON: two runs of one seed must give the same text.
std::string normalised_document(const Value& document);

// "" when every invariant held (and, in kSimulated, the two runs agree). `binary` is the
// path printed in the replay command.
std::string check_seed(uint64_t seed, Variant variant, const std::string& binary, bool verbose, Coverage* cov);

}  // namespace flowrt::sim
