// The runtime's parts on the path of an event: the event queue, the plan cache, building a
// context for a record trigger, record creation, reading a context record, and the whole
// engine per insert.
#include <benchmark/benchmark.h>

#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/micro/micro_flows.h"
#include "plans/value_json.h"
#include "runtime/context.h"
#include "runtime/engine.h"
#include "runtime/engine_core.h"
#include "runtime/event_queue.h"
#include "runtime/flow_registry.h"
#include "runtime/flow_slot.h"
#include "store/record_store.h"
#include "triggers/trigger_index.h"

namespace flowrt {
namespace {

constexpr TimeMs kNow = kDefaultVirtualStart;

Value new_incident() {
  return *parse_json(R"({"number": "INC0001", "priority": 1, "group": "network", "state": "new"})");
}

// ---- event queue ----

// One push and one pop on the event queue, one thread.
void BM_EventQueue_PushPop(benchmark::State& state) {
  EventQueue queue;
  FlowSlot slot(0, "f");
  Context event(&slot, TriggerData{}, Value());
  Context* out = nullptr;
  for (auto _ : state) {
    queue.push(&event);
    benchmark::DoNotOptimize(queue.try_pop(&out));
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EventQueue_PushPop);

// Events through the queue with 2 producers (serialized by a stand-in commit lock) and 1 consumer; see items/s.
void BM_EventQueue_TwoProducersOneConsumer(benchmark::State& state) {
  struct Shared {
    EventQueue queue;
    std::mutex commit;  // pushes are serialized, as under the Dispatcher's commit lock
    FlowSlot slot{0, "f"};
    Context event{&slot, TriggerData{}, Value()};
  };
  static Shared shared;  // outlives every thread; the consumer drains it in each run
  if (state.thread_index() == 0) {
    // The consumer: two events per iteration, so that it takes exactly what both
    // producers push (every thread runs the same number of iterations).
    Context* out = nullptr;
    for (auto _ : state) {
      for (int taken = 0; taken < 2;) {
        if (shared.queue.try_pop(&out)) {
          ++taken;
        } else {
          std::this_thread::yield();
        }
      }
      benchmark::DoNotOptimize(out);
    }
    state.SetItemsProcessed(2 * state.iterations());
  } else {
    for (auto _ : state) {
      std::lock_guard<std::mutex> lock(shared.commit);
      shared.queue.push(&shared.event);
    }
  }
}
BENCHMARK(BM_EventQueue_TwoProducersOneConsumer)->Threads(3)->UseRealTime();

// ---- plan cache ----

// FlowRegistry::plan_for on an active flow whose cached plan is current (a cache hit).
void BM_PlanCache_Hit(benchmark::State& state) {
  FlowRegistry registry(nullptr);
  registry.add(micro::parse_or_throw(micro::kTriageFlow));
  const CompileOptions options;
  if (!registry.activate("triage", options, kNow)) return state.SkipWithError("cannot activate triage");
  FlowSlot* slot = registry.slot("triage");
  if (!registry.plan_for(*slot, options).plan) return state.SkipWithError("no plan");
  const uint64_t compiles = registry.compiles();
  for (auto _ : state) benchmark::DoNotOptimize(registry.plan_for(*slot, options));
  if (registry.compiles() != compiles) state.SkipWithError("plan_for compiled: not a cache hit");
}
BENCHMARK(BM_PlanCache_Hit);

// ---- context start and record creation ----

// Dispatcher::prepare_record for one insert: index lookup, trigger test, build (and drop) the Context.
void BM_ContextStart_RecordTrigger(benchmark::State& state) {
  FlowSlot slot(0, "triage");
  slot.active.store(true);
  TriggerIndex index;
  auto spec = std::make_shared<TriggerSpec>(micro::compile_or_throw(micro::kTriageFlow)->trigger);
  index.add(TriggerEntry{0, &slot, "triage", spec});
  RecordStore store;
  const Value record = *store.build_insert(new_incident(), kNow);
  const std::string_view table = "incident";
  for (auto _ : state) {
    for (const TriggerEntry& e : index.on_record(table, RecordOperation::kInsert)) {
      auto* flow = static_cast<FlowSlot*>(e.handle);
      if (!flow->active.load(std::memory_order_acquire)) continue;
      if (!record_trigger_matches(*e.spec, RecordOperation::kInsert, record, nullptr, true)) continue;
      TriggerData t;
      t.type = TriggerType::kRecord;
      t.operation = RecordOperation::kInsert;
      t.time = kNow;
      t.table = Value(table);
      t.sys_id = record["sys_id"];
      t.record = record;
      std::shared_ptr<Context> ctx = std::make_shared<Context>(flow, std::move(t), Value());
      benchmark::DoNotOptimize(ctx.get());
    }
  }
}
BENCHMARK(BM_ContextStart_RecordTrigger);

// RecordStore::build_insert: a new record (sys_id and engine fields) from four values.
void BM_RecordStore_BuildInsert(benchmark::State& state) {
  RecordStore store;
  const Value values = new_incident();
  for (auto _ : state) benchmark::DoNotOptimize(store.build_insert(values, kNow));
}
BENCHMARK(BM_RecordStore_BuildInsert);

// RecordStore::build_insert + commit_insert into one table of up to 65,536 records.
void BM_RecordStore_BuildAndCommitInsert(benchmark::State& state) {
  // A fresh store (untimed) every 65,536 inserts, so that memory stays small however long it runs.
  constexpr uint64_t kPerStore = 1 << 16;
  auto store = std::make_unique<RecordStore>();
  const Value values = new_incident();
  uint64_t in_store = 0;
  for (auto _ : state) {
    if (in_store == kPerStore) {
      state.PauseTiming();
      store = std::make_unique<RecordStore>();
      in_store = 0;
      state.ResumeTiming();
    }
    uint64_t id_number = 0;
    Result<Value> record = store->build_insert(values, kNow, &id_number);
    if (!record) return state.SkipWithError("insert failed");
    Result<bool> committed = store->commit_insert("incident", *record, id_number);
    if (!committed || !*committed) return state.SkipWithError("insert failed");
    ++in_store;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RecordStore_BuildAndCommitInsert);

// ---- whole contexts through the engine ----

// An engine on a virtual clock with the triage flow and 50 users (groups group0..group9).
std::unique_ptr<Engine> triage_engine(size_t retention) {
  EngineOptions options;
  options.properties.worker_threads = 2;
  options.properties.context_retention = retention;
  auto engine = std::make_unique<Engine>(options);
  Diagnostics d = engine->load_text(micro::kTriageFlow, "triage.json");
  if (!d.empty()) throw std::runtime_error(d.describe());
  for (int u = 0; u < 50; ++u) {
    Value user = Value::object({{"user_name", Value(std::string_view("user" + std::to_string(u)))},
                                {"group", Value(std::string_view("group" + std::to_string(u % 10)))}});
    if (!engine->insert("sys_user", user)) throw std::runtime_error("cannot insert a user");
  }
  return engine;
}

std::vector<Value> incidents(size_t n) {
  std::vector<Value> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(Value::object({{"number", Value(std::string_view("INC" + std::to_string(1000000 + i)))},
                                 {"priority", Value(static_cast<int>(1 + i % 3))},
                                 {"group", Value(std::string_view("group" + std::to_string(i % 10)))},
                                 {"state", Value("new")}}));
  }
  return out;
}

// Freezing a finished context of the triage flow (what the thread that ran it does at its
// end with the memory store): packing its record into one block, then (when the block is
// dropped) releasing the references the block took. The flow waits a minute first, so that
// the benchmark can hold the live context before it runs: 4 steps, the wait and triage's 3.
void BM_FrozenContext_Freeze_FourSteps(benchmark::State& state) {
  std::unique_ptr<Engine> engine = triage_engine(0);
  std::string waiting = micro::kTriageFlow;
  const std::string_view actions = R"("actions": [)", id = R"("id": "triage")";
  waiting.replace(waiting.find(actions), actions.size(), R"("actions": [{"action": "wait", "inputs": {"duration": "1m"}},)");
  waiting.replace(waiting.find(id), id.size(), R"("id": "triage_waiting")");
  if (Diagnostics d = engine->load_text(waiting, "waiting.json"); !d.empty()) return state.SkipWithError(d.describe().c_str());
  if (!engine->insert("incident", incidents(1).front())) return state.SkipWithError("insert failed");
  engine->settle(0);
  std::shared_ptr<Context> live;
  for (const std::shared_ptr<Context>& c : engine->core().contexts.unfinished()) {
    if (c->flow->id == "triage_waiting") live = c;
  }
  if (!live || !engine->advance(60'000)) return state.SkipWithError("expected a waiting context");
  engine->settle(0);
  if (!live->finished() || live->summary().steps != 4) return state.SkipWithError("expected it finished with 4 steps");
  for (auto _ : state) benchmark::DoNotOptimize(FrozenContext::freeze(*live));
}
BENCHMARK(BM_FrozenContext_Freeze_FourSteps);

// The JSON record of a finished context of the 3-step triage flow, read from its frozen
// form (FrozenContext::to_value: decoding included), as every finished record is read.
void BM_FrozenContext_ToValue_ThreeSteps(benchmark::State& state) {
  std::unique_ptr<Engine> engine = triage_engine(0);
  if (!engine->insert("incident", incidents(1).front())) return state.SkipWithError("insert failed");
  engine->settle();
  const KeptContext ctx = engine->core().contexts.find(uint64_t{1});
  if (!ctx || !ctx.frozen() || ctx.frozen()->status() != ContextStatus::kCompleted || ctx.frozen()->summary().steps != 3) {
    return state.SkipWithError("expected one completed 3-step context");
  }
  const size_t limit = engine->properties().record_value_limit;
  for (auto _ : state) benchmark::DoNotOptimize(ctx.frozen()->to_value(limit));
}
BENCHMARK(BM_FrozenContext_ToValue_ThreeSteps);

// Whole engine, virtual clock: 100 inserts each starting the 3-step triage flow, then settle; see per_insert.
void BM_Engine_InsertThreeStepFlow(benchmark::State& state) {
  const size_t batch = static_cast<size_t>(state.range(0));
  std::unique_ptr<Engine> engine = triage_engine(1000);
  const std::vector<Value> batch_values = incidents(batch);
  for (auto _ : state) {
    for (const Value& v : batch_values) {
      if (!engine->insert("incident", v)) return state.SkipWithError("insert failed");
    }
    engine->settle();
  }
  const uint64_t inserts = static_cast<uint64_t>(state.iterations()) * batch;
  if (engine->core().contexts.dropped() + engine->core().contexts.size() != inserts) {
    state.SkipWithError("expected one context per insert");
  }
  state.SetItemsProcessed(static_cast<int64_t>(inserts));
  state.counters["per_insert"] =
      benchmark::Counter(static_cast<double>(inserts), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_Engine_InsertThreeStepFlow)->Arg(100)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace flowrt
