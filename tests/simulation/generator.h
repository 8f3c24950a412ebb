// The simulation's scenario generator. Contract: generate_scenario(seed, variant) returns a
// random but valid set of definitions and what the model must know of them. The same seed
// and variant always give the same scenario (std::mt19937_64).
//
// Virtual-clock variants (kSimulated, kThreads): record flows with conditions (also the
// changes ops) and run options, event, API and schedule flows, subflows (one calling
// itself, two calling each other, the counter pattern), an action definition, custom C++
// actions (sim_actions.h), locks with limits and weights (also two keys taken crosswise),
// waits, wait_for_condition, variables and transforms, if / else_if / else, for_each,
// try/catch, failures on purpose, writes that start other flows up to the recursion limits,
// and second versions of some flows and of a subflow that the traffic saves and publishes
// mid-run. kRealClock: the lock paths on a real clock (sim_real.h builds its scenario).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "plans/time.h"
#include "plans/value.h"

namespace flowrt::sim {

// How the engine runs a seed: simulation mode on the driving thread (replays exactly),
// 2-4 real workers on a virtual clock, or real workers on the real clock.
enum class Variant { kSimulated, kThreads, kRealClock };
const char* variant_name(Variant v);

class Rng {
 public:
  explicit Rng(uint64_t seed) : rng_(seed) {}
  int64_t between(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  size_t index(size_t n) { return static_cast<size_t>(between(0, static_cast<int64_t>(n) - 1)); }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[index(v.size())];
  }

 private:
  std::mt19937_64 rng_;
};

// A condition on one field of a record: {"field", "op", "value"}. The model evaluates it
// (model_condition_holds), independently of the engine.
struct FieldCondition {
  std::string field;
  std::string op;  // eq ne lt le gt ge in changes changes_to changes_from
  Value value;
};

// What the model needs to know of a flow's trigger. Every version of a flow has the same
// trigger; only the steps differ.
struct FlowSpec {
  enum class Kind { kRecord, kEvent, kApi, kSchedule };
  std::string id;
  Kind kind = Kind::kApi;
  std::string table;  // record
  std::string when;   // created | updated | created_or_updated | deleted
  std::string run;    // "" (default always) | once | always | for_each_unique_change | for_every_update
  std::optional<FieldCondition> condition;
  std::string event;  // event
  // schedule: every `every` ms from `start` (or from activation when none), or once `at`.
  DurationMs every = 0;
  std::optional<TimeMs> start;
  std::optional<TimeMs> at;
};

struct Scenario {
  uint64_t seed = 0;
  Variant variant = Variant::kSimulated;
  unsigned workers = 2;
  int64_t recursion_limit = 3;
  std::vector<std::string> tables;             // data tables with triggers (t0, t1, ...)
  std::vector<std::string> lock_names;         // k0, k1, ...; each has a counter record
  std::map<std::string, int64_t> lock_limits;  // the declared ones (others: limit 1)
  std::vector<std::string> events;
  std::vector<FlowSpec> flows;
  // Every definition (flows, subflows, action definitions) by id: its versions, the first
  // loaded at the start, the others saved and published by the traffic. Each version's
  // first step logs "version ID N", so a record tells which version ran.
  std::map<std::string, std::vector<Value>> versions;
  std::string definitions;  // the first version of every definition, a JSON array
  int64_t operations = 40;  // how much traffic
  // Custom C++ actions in use: "" none, "normal" (sim_echo, sim_stamp, sim_throw,
  // sim_slow), "hang" (only sim_hang, which never returns; kThreads only).
  std::string custom;
  int64_t limit_of(const std::string& lock) const {
    auto it = lock_limits.find(lock);
    return it == lock_limits.end() ? 1 : it->second;
  }
  const FlowSpec* flow(const std::string& id) const {
    for (const FlowSpec& f : flows) {
      if (f.id == id) return &f;
    }
    return nullptr;
  }
};

// The table counters live in ({"name": K, "n": 0}, one per lock name), and a table no flow
// listens to.
inline constexpr const char* kCounterTable = "counter";
inline constexpr const char* kSinkTable = "sink";
// Values of the data tables' field b.
inline const std::vector<std::string> kLetters = {"x", "y", "z"};

Scenario generate_scenario(uint64_t seed, Variant variant = Variant::kSimulated);

// The model's reading of a condition on one field: comparing values of different types is
// false; ne is the negation of eq; a missing field is null. The changes ops compare with
// `previous` (null when there is none: then changes holds when the field is not null).
bool model_condition_holds(const FieldCondition& c, const Value& record, const Value* previous = nullptr);

}  // namespace flowrt::sim
