// crash_child: runs the crash test's seeded workload (crash_workload.h) on a SQLite data
// file until it is done or killed. tests/store/crash_test.cpp runs it, kills it with
// SIGKILL at seeded random moments, and starts it again on the same file.
//
//   crash_child --data FILE --side FILE --seed S --ops N --acked A
//
// After each operation returns it prints "ack <n> <kind> <detail>" and flushes; once the
// workload and the final advance are done it prints "done". On start it opens the engine
// (custom action registered, definitions loaded, recover()), then goes on after op A (the
// last one the test saw acknowledged): op A+1 may have returned without its ack printed,
// so it first looks in the store whether op A+1 is there, and only runs it if not.
// Operations name their records (i<n>, q<n>), events and calls carry {"op": n}, and an
// advance goes to an absolute time, so "is it there" is a look-up.
// Exit codes: 0 done, 2 bad arguments, 3 the engine refused something (message on stderr).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "actions/custom_action.h"
#include "runtime/engine.h"
#include "store/store.h"
#include "tests/store/crash/crash_invariants.h"
#include "tests/store/crash/crash_workload.h"

namespace flowrt::crash {
namespace {

struct Args {
  std::string data;
  std::string side;
  uint64_t seed = 0;
  int ops = 0;
  int acked = 0;
};

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "crash_child: %s\n", what.c_str());
  std::exit(3);
}

// The custom action: appends "<context id> <key>" to the side file, one write(2) per
// line (O_APPEND), before it returns. At-least-once: a line may be there for a call whose
// step a crash then lost.
CustomActionType side_effect(const std::string& side_file) {
  CustomActionType t;
  t.name = kSideEffectAction;
  t.inputs = {{"key", ParamType::kString, true}};
  t.run = [side_file](CustomActionContext& ctx) -> Result<Value> {
    const std::string line =
        std::string(ctx.context_id().as_string()) + " " + std::string(ctx.input("key").as_string()) + "\n";
    const int fd = ::open(side_file.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0) return Error{"cannot open " + side_file};
    const ssize_t w = ::write(fd, line.data(), line.size());
    ::close(fd);
    if (w != static_cast<ssize_t>(line.size())) return Error{"short write to " + side_file};
    return Value::empty_object();
  };
  return t;
}

// Whether the file holds a context of `flow` started for op n (an event's payload or a
// call's inputs carry it). Read from the store: a context record does not show the
// payload.
bool has_context_with_op(const StoredState& stored, std::string_view flow, int n) {
  for (const StoredContext& c : stored.contexts) {
    if (c.flow == flow && c.trigger["payload"]["op"] == Value(static_cast<long long>(n))) return true;
  }
  return false;
}

// Whether op's effect is in the engine (it was done before the last crash).
bool already_done(const Engine& engine, const StoredState& stored, const Op& op) {
  switch (op.kind) {
    case OpKind::kInsertItem:
    case OpKind::kInsertRequest: return !engine.record(op.table, op.sys_id).is_null();
    case OpKind::kUpdateItem:
    case OpKind::kDecide: return engine.record(op.table, op.sys_id)["last_op"] == Value(static_cast<long long>(op.n));
    case OpKind::kDeleteItem: return engine.record(op.table, op.sys_id).is_null();
    case OpKind::kPing: return has_context_with_op(stored, "ping_wait", op.n);
    case OpKind::kCallJob: return has_context_with_op(stored, "api_job", op.n);
    case OpKind::kAdvance: return engine.now() >= kStart + op.at;
  }
  return false;
}

// Moves the clock to kStart + at (no-op when it is there already).
void advance_to(Engine& engine, DurationMs at) {
  const DurationMs d = kStart + at - engine.now();
  if (d <= 0) return;
  Status s = engine.advance(d);
  if (!s.is_ok()) fail("advance: " + s.message());
}

// Runs op; returns the ack's detail.
std::string run(Engine& engine, const Op& op) {
  switch (op.kind) {
    case OpKind::kInsertItem:
    case OpKind::kInsertRequest: {
      Value values = Value::object({{"sys_id", Value(op.sys_id)}});
      std::vector<Member> m = members_of(values);
      for (const Member& f : members_of(op.values)) m.push_back(f);
      Result<Value> r = engine.insert(op.table, Value::object(std::move(m)));
      if (!r.is_ok()) fail("insert " + op.sys_id + ": " + r.message());
      return op.sys_id;
    }
    case OpKind::kUpdateItem:
    case OpKind::kDecide: {
      Result<Value> r = engine.update(op.table, op.sys_id, op.values);
      if (!r.is_ok()) fail("update " + op.sys_id + ": " + r.message());
      return op.sys_id;
    }
    case OpKind::kDeleteItem: {
      Result<Value> r = engine.remove(op.table, op.sys_id);
      if (!r.is_ok()) fail("delete " + op.sys_id + ": " + r.message());
      return op.sys_id;
    }
    case OpKind::kPing: {
      Status s = engine.fire_event("ping", op.values);
      if (!s.is_ok()) fail("fire_event: " + s.message());
      return "-";
    }
    case OpKind::kCallJob: {
      Result<std::string> id = engine.call_flow("api_job", op.values);
      if (!id.is_ok()) fail("call_flow: " + id.message());
      return *id;
    }
    case OpKind::kAdvance: advance_to(engine, op.at); return std::to_string(engine.now());
  }
  return "-";
}

void ack(const Op& op, const std::string& detail) {
  std::printf("ack %d %s %s\n", op.n, op_kind_name(op.kind), detail.c_str());
  std::fflush(stdout);
}

int main_(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const std::string v = argv[i + 1];
    if (k == "--data") a.data = v;
    else if (k == "--side") a.side = v;
    else if (k == "--seed") a.seed = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--ops") a.ops = std::atoi(v.c_str());
    else if (k == "--acked") a.acked = std::atoi(v.c_str());
    else {
      std::fprintf(stderr, "crash_child: unknown argument %s\n", k.c_str());
      return 2;
    }
  }
  if (a.data.empty() || a.side.empty() || a.ops <= 0) {
    std::fprintf(stderr, "usage: crash_child --data FILE --side FILE --seed S --ops N [--acked A]\n");
    return 2;
  }
  const std::vector<Op> ops = make_workload(a.seed, a.ops);

  // What the file holds, read before the engine takes it (an empty state for a new file).
  StoredState stored;
  if (a.acked < a.ops) {
    StoreOptions so;
    so.kind = "sqlite";
    so.path = a.data;
    so.read_only = true;
    if (Result<std::unique_ptr<Store>> store = open_store(so); store.is_ok()) {
      Result<StoredState> state = load_with_history(**store);
      if (!state.is_ok()) fail("load: " + state.message());
      stored = std::move(state).value();
    }
  }

  EngineOptions o;
  o.store = "sqlite";
  o.data_file = a.data;
  o.simulation_seed = a.seed;
  o.properties.durability = Durability::kNormal;  // survives a crash of the process
  Result<std::unique_ptr<Engine>> opened = Engine::open(o);
  if (!opened.is_ok()) fail("open: " + opened.message());
  Engine& engine = **opened;
  Status reg = engine.register_action(side_effect(a.side));
  if (!reg.is_ok()) fail("register_action: " + reg.message());
  Diagnostics diags = engine.load_text(definitions(), "crash_workload");
  if (!diags.empty()) fail("definitions: " + diags.describe());
  engine.recover();
  engine.settle(0);

  for (int i = a.acked; i < a.ops; ++i) {
    const Op& op = ops[static_cast<size_t>(i)];
    if (i == a.acked && already_done(engine, stored, op)) {
      ack(op, "again");
      continue;
    }
    const std::string detail = run(engine, op);
    engine.settle(0);
    ack(op, detail);
  }
  advance_to(engine, final_target(ops));
  engine.settle(0);
  std::printf("done\n");
  std::fflush(stdout);
  return 0;
}

}  // namespace
}  // namespace flowrt::crash

int main(int argc, char** argv) { return flowrt::crash::main_(argc, argv); }
