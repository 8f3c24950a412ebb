// The simulation's scenario generator. Contract: generate_scenario(seed) returns a random
// but valid set of definitions (record flows with conditions and run options, event and
// API flows, subflows, locks with limits and weights, waits, wait_for_condition, failures
// on purpose with on_error and try/catch, writes that start other flows up to the
// recursion limits, and the counter-under-lock pattern) plus what the model must know of
// them. The same seed always gives the same scenario (std::mt19937_64).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "plans/value.h"

namespace flowrt::sim {

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

// A trigger condition on one field of the record: {"field", "op", "value"}. The
// simulation's own model evaluates it (model_condition_holds), independently of the engine.
struct FieldCondition {
  std::string field;
  std::string op;  // eq ne lt le gt ge in
  Value value;
};

// What the model needs to know of a flow: its trigger.
struct FlowSpec {
  enum class Kind { kRecord, kEvent, kApi };
  std::string id;
  Kind kind = Kind::kApi;
  std::string table;  // record
  std::string when;   // created | updated | created_or_updated | deleted
  std::string run;    // "" (default always) | once | always | for_each_unique_change | for_every_update
  std::optional<FieldCondition> condition;
  std::string event;  // event
};

struct Scenario {
  uint64_t seed = 0;
  unsigned workers = 2;
  int64_t recursion_limit = 3;
  std::vector<std::string> tables;       // data tables with triggers (t0, t1, ...)
  std::vector<std::string> lock_names;   // k0, k1, ...; each has a counter record
  std::map<std::string, int64_t> lock_limits;  // the declared ones (others: limit 1)
  std::vector<std::string> events;
  std::vector<FlowSpec> flows;
  std::string definitions;  // a JSON array of every definition
  int64_t operations = 40;  // how much traffic
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

Scenario generate_scenario(uint64_t seed);

// The model's reading of a trigger condition: comparing values of different types is
// false; ne is the negation of eq; a missing field is null.
bool model_condition_holds(const FieldCondition& c, const Value& record);

}  // namespace flowrt::sim
