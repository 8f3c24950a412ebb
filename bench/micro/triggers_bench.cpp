// Trigger matching: finding the flows a record operation may start, and testing their
// compiled trigger conditions (the commit path's work before a context is built).
#include <benchmark/benchmark.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "compiler/compiler.h"
#include "plans/value_json.h"
#include "triggers/trigger_index.h"

namespace flowrt {
namespace {

constexpr const char* kIncidentTrigger = R"({"type": "record", "table": "incident", "when": "created",
  "condition": {"field": "priority", "op": "le", "value": 3}})";

std::shared_ptr<const TriggerSpec> compile_spec(const std::string& json) {
  auto spec = std::make_shared<TriggerSpec>();
  Diagnostics d;
  if (!compile_trigger(*parse_json(json), "bench", "", spec.get(), &d)) throw std::runtime_error(d.describe());
  return spec;
}

// One flow on `incident` among 10,000 flows on 100 other tables (as the fanout workload):
// created, updated or created_or_updated, each with a condition on `level`.
const TriggerIndex& fanout_index() {
  static const TriggerIndex index = [] {
    TriggerIndex built;
    for (uint32_t i = 0; i < 10000; ++i) {
      const char* when = i % 3 == 0 ? "created" : (i % 3 == 1 ? "updated" : "created_or_updated");
      built.add(TriggerEntry{i, nullptr, "other_" + std::to_string(i),
                             compile_spec(R"({"type": "record", "table": "other_)" + std::to_string(i % 100) +
                                          R"(", "when": ")" + when +
                                          R"(", "condition": {"field": "level", "op": "ge", "value": )" +
                                          std::to_string(i % 7) + "}}")});
    }
    built.add(TriggerEntry{10000, nullptr, "triage", compile_spec(kIncidentTrigger)});
    return built;
  }();
  return index;
}

Value incident() {
  return *parse_json(R"({"sys_id": "0123456789abcdef0123456789abcdef", "number": "INC0001", "priority": 1,
                         "group": "network", "state": "new"})");
}

// Looks up the entries for (incident, insert) in an index of 10,001 flows on 101 tables: 1 found.
void BM_TriggerIndex_Lookup(benchmark::State& state) {
  const TriggerIndex& index = fanout_index();
  if (index.on_record("incident", RecordOperation::kInsert).size() != 1) return state.SkipWithError("expected 1 entry");
  for (auto _ : state) benchmark::DoNotOptimize(index.on_record("incident", RecordOperation::kInsert).data());
}
BENCHMARK(BM_TriggerIndex_Lookup);

// Looks up (incident, insert) among 10,001 flows and tests each entry's trigger, as the commit path does: 1 match.
void BM_TriggerIndex_LookupAndMatch(benchmark::State& state) {
  const TriggerIndex& index = fanout_index();
  const Value record = incident();
  size_t matched = 0;
  for (auto _ : state) {
    for (const TriggerEntry& e : index.on_record("incident", RecordOperation::kInsert)) {
      if (record_trigger_matches(*e.spec, RecordOperation::kInsert, record, nullptr, true)) ++matched;
    }
    benchmark::DoNotOptimize(matched);
  }
  if (matched != static_cast<size_t>(state.iterations())) state.SkipWithError("expected 1 match per insert");
}
BENCHMARK(BM_TriggerIndex_LookupAndMatch);

// Evaluates one compiled record trigger (when: created, condition priority <= 3) against an inserted record.
void BM_RecordTriggerMatches(benchmark::State& state) {
  const std::shared_ptr<const TriggerSpec> spec = compile_spec(kIncidentTrigger);
  const Value record = incident();
  for (auto _ : state) {
    benchmark::DoNotOptimize(record_trigger_matches(*spec, RecordOperation::kInsert, record, nullptr, true));
  }
}
BENCHMARK(BM_RecordTriggerMatches);

}  // namespace
}  // namespace flowrt
