// Values, templates and conditions: the work every step does.
#include <benchmark/benchmark.h>

#include "compiler/compiler.h"
#include "plans/eval.h"
#include "plans/value_json.h"

namespace flowrt {
namespace {

void BM_ValueCopy_SharedObject(benchmark::State& state) {
  Value record = *parse_json(R"({"number": "INC0001", "priority": 1, "group": "network", "state": "new",
                                "short_description": "core switch down in building 4"})");
  for (auto _ : state) {
    Value copy = record;
    benchmark::DoNotOptimize(copy);
  }
}
BENCHMARK(BM_ValueCopy_SharedObject);

void BM_RecordMerge(benchmark::State& state) {
  Value record = *parse_json(R"({"number": "INC0001", "priority": 1, "group": "network", "state": "new"})");
  Value patch = *parse_json(R"({"assigned_to": "ada", "state": "assigned"})");
  for (auto _ : state) benchmark::DoNotOptimize(record.merged(patch));
}
BENCHMARK(BM_RecordMerge);

void BM_ConditionEvaluate(benchmark::State& state) {
  Condition c;
  Diagnostics d;
  compile_record_condition(*parse_json(R"({"all": [{"field": "priority", "op": "le", "value": 3},
                                                   {"field": "state", "op": "ne", "value": "closed"}]})"),
                           "b", "", &c, &d);
  Value record = *parse_json(R"({"priority": 1, "state": "new"})");
  Scope scope;
  scope.record = &record;
  for (auto _ : state) benchmark::DoNotOptimize(evaluate(c, scope));
}
BENCHMARK(BM_ConditionEvaluate);

}  // namespace
}  // namespace flowrt
