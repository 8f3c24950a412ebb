// Values, templates and conditions: the work every step does.
#include <benchmark/benchmark.h>

#include <variant>

#include "bench/micro/micro_flows.h"
#include "compiler/compiler.h"
#include "plans/eval.h"
#include "plans/value_json.h"

namespace flowrt {
namespace {

// Copies a record Value (a reference-count increment on a shared object).
void BM_ValueCopy_SharedObject(benchmark::State& state) {
  Value record = *parse_json(R"({"number": "INC0001", "priority": 1, "group": "network", "state": "new",
                                "short_description": "core switch down in building 4"})");
  for (auto _ : state) {
    Value copy = record;
    benchmark::DoNotOptimize(copy);
  }
}
BENCHMARK(BM_ValueCopy_SharedObject);

// Merges a two-field patch into a four-field record (an update's new version).
void BM_RecordMerge(benchmark::State& state) {
  Value record = *parse_json(R"({"number": "INC0001", "priority": 1, "group": "network", "state": "new"})");
  Value patch = *parse_json(R"({"assigned_to": "ada", "state": "assigned"})");
  for (auto _ : state) benchmark::DoNotOptimize(record.merged(patch));
}
BENCHMARK(BM_RecordMerge);

// A waiting context's stored checkpoint and trigger, as recovery parses them (the sqlite
// store's options: shared key lists and shared long strings).
constexpr const char* kStoredCheckpoint =
    R"({"exec":{"plan_version":"approval@41477fae","started":true,"run_ms":0.02365998923778534,"stack":[{"unit":0,"steps":[null],"blocks":[{"pc":1}]}],"parked":{"record":0,"path":"1","inputs":["request","r0",{"field":"approved","op":"eq","value":true},"30d"],"wait":{"kind":"record","deadline":1798770804997,"table":"request","sys_id":"r0","seen_is_trigger":true}}},"record":{"started":1796178804997,"variables":[],"steps":[[0,"1",1796178804997,-1,{"table":"request","sys_id":"r0","condition":{"field":"approved","op":"eq","value":true},"timeout":"30d"},null,1]],"logs":[]},"uses":[["flow","approval","504ca7e23ec82014"]]})";
constexpr const char* kStoredTrigger =
    R"({"type":"record","time":1796178369497,"table":"request","operation":"insert","sys_id":"r5","record":{"sys_id":"r5","approved":false,"sys_created_on":"2026-12-02T02:26:09.497Z","sys_updated_on":"2026-12-02T02:26:09.497Z","sys_mod_count":0}})";

void BM_ParseStoredCheckpoint(benchmark::State& state) {
  const JsonLimits limits{SIZE_MAX, 100000, SIZE_MAX, /*shared_shapes=*/state.range(0) != 0};
  for (auto _ : state) {
    Value checkpoint, trigger;
    benchmark::DoNotOptimize(parse_json(kStoredCheckpoint, &checkpoint, nullptr, limits));
    benchmark::DoNotOptimize(parse_json(kStoredTrigger, &trigger, nullptr, limits));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(std::string_view(kStoredCheckpoint).size() + std::string_view(kStoredTrigger).size()));
}
BENCHMARK(BM_ParseStoredCheckpoint)->Arg(0)->Arg(1);

// Writes the stored checkpoint back as compact JSON (what a store does with every context
// record), and as indented JSON.
void BM_WriteJson_StoredCheckpoint(benchmark::State& state) {
  const Value checkpoint = *parse_json(kStoredCheckpoint);
  const bool pretty = state.range(0) != 0;
  std::string out;
  for (auto _ : state) {
    if (pretty) {
      benchmark::DoNotOptimize(to_pretty_json(checkpoint));
    } else {
      out.clear();
      write_json(checkpoint, out);
      benchmark::DoNotOptimize(out);
    }
  }
}
BENCHMARK(BM_WriteJson_StoredCheckpoint)->Arg(0)->Arg(1);

// Compares two equal copies of the stored checkpoint that share no storage (a deep compare
// to the last leaf), and a four-field record with a copy of it (a record update's check).
void BM_ValueEqual(benchmark::State& state) {
  const char* text = state.range(0) != 0 ? kStoredCheckpoint
                                         : R"({"number": "INC0001", "priority": 1, "group": "network", "state": "new"})";
  const Value a = *parse_json(text), b = *parse_json(text);
  for (auto _ : state) benchmark::DoNotOptimize(a == b);
}
BENCHMARK(BM_ValueEqual)->Arg(0)->Arg(1);

// Evaluates a compiled two-clause "all" condition against a record.
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

// The scope a step of the triage flow renders its inputs in: the trigger record and the
// outputs of the look-up step `user` (slot 0).
struct TriageScope {
  TriageScope() {
    trigger.type = TriggerType::kRecord;
    trigger.table = Value("incident");
    trigger.sys_id = Value("0123456789abcdef0123456789abcdef");
    trigger.record = *parse_json(R"({"sys_id": "0123456789abcdef0123456789abcdef", "number": "INC0001",
                                     "priority": 1, "group": "network", "state": "new"})");
    const Value user = *parse_json(R"({"sys_id": "u1", "user_name": "ada", "group": "network"})");
    steps.push_back(Value::object({{"record", user}, {"found", Value(true)}}));  // look_up_record's outputs
    scope.trigger = &trigger;
    scope.steps = steps;
  }
  TriageScope(const TriageScope&) = delete;  // scope points into the members
  TriageScope& operator=(const TriageScope&) = delete;
  TriggerData trigger;
  std::vector<Value> steps;
  Scope scope;
};

// The template of input `input` of step `step` of the compiled triage flow.
const Template& triage_template(size_t step, std::string_view input) {
  static const std::shared_ptr<const Plan> plan = micro::compile_or_throw(micro::kTriageFlow);
  return *std::get<ActionStep>(plan->root().body.at(step).op).input(input);
}

// Renders a text template with two pills: "{{trigger.record.number}} assigned to {{steps.user.record.user_name}}".
void BM_TemplateRender_TextTwoPills(benchmark::State& state) {
  const Template& t = triage_template(2, "message");
  if (t.kind != Template::Kind::kText) return state.SkipWithError("the log message is not a text template");
  TriageScope s;
  for (auto _ : state) benchmark::DoNotOptimize(render(t, s.scope));
}
BENCHMARK(BM_TemplateRender_TextTwoPills);

// Renders an object template: {"assigned_to": "{{steps.user.record.user_name}}", "state": "assigned"}.
void BM_TemplateRender_Object(benchmark::State& state) {
  const Template& t = triage_template(1, "values");
  if (t.kind != Template::Kind::kObject) return state.SkipWithError("update_record's values is not an object template");
  TriageScope s;
  for (auto _ : state) benchmark::DoNotOptimize(render(t, s.scope));
}
BENCHMARK(BM_TemplateRender_Object);

}  // namespace
}  // namespace flowrt
