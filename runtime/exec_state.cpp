#include "runtime/exec_state.h"

#include <string>

namespace flowrt {
namespace {

constexpr const char* kKinds[] = {"body", "branch", "loop", "try", "catch"};

template <class Vector>
Value values(const Vector& v) {
  return Value::array(std::vector<Value>(v.begin(), v.end()));
}

std::vector<Value> list_of(const Value& v) { return std::vector<Value>(v.items().begin(), v.items().end()); }

const char* wait_kind(WaitRequest::Kind k) {
  switch (k) {
    case WaitRequest::Kind::kNone: return "none";
    case WaitRequest::Kind::kTimer: return "timer";
    case WaitRequest::Kind::kRecord: return "record";
    case WaitRequest::Kind::kLock: return "lock";
  }
  return "none";
}

// The node a frame is positioned after: what it ran last (pc was advanced before running).
const Node* node_before(const BlockFrame& f) {
  return f.pc == 0 || f.pc > f.block->size() ? nullptr : &(*f.block)[f.pc - 1];
}

void add_unless(ObjectBuilder& b, const char* key, Value v, int64_t by_default) {
  if (v.as_int() != by_default) b.add(Value(key), std::move(v));
}

void add_unless_null(ObjectBuilder& b, const char* key, const Value& v) {
  if (!v.is_null()) b.add(Value(key), v);
}

template <class Vector>
void add_list(ObjectBuilder& b, const char* key, const Vector& v) {
  if (!v.empty()) b.add(Value(key), values(v));
}

// An integer field into *field; left out, *field keeps its default (the struct's own, as
// to_value compares with).
template <class Int>
void read_int(const Value& v, Int* field) {
  if (v.is_number()) *field = static_cast<Int>(v.as_int());
}

Error state_mismatch(const std::string& what) { return Error{"context state does not fit the plan: " + what}; }

}  // namespace

Value ExecState::to_value(const Plan& plan, const Value& trigger_record) const {
  // A field at its default (its struct's) is left out, and read back as that default: a
  // waiting context's checkpoint is read back at every recovery, so fewer bytes are less
  // to parse.
  const BlockFrame block_default;
  const Activation activation_default;
  const WaitRequest wait_default;
  std::vector<Value> stack_json;
  for (const Activation& a : stack) {
    std::vector<Value> blocks;
    for (const BlockFrame& f : a.blocks) {
      ObjectBuilder b(10);
      if (f.kind != BlockFrame::Kind::kBody) b.add(Value("kind"), Value(kKinds[static_cast<int>(f.kind)]));
      b.add(Value("pc"), Value(f.pc));
      add_unless(b, "branch", Value(static_cast<long long>(f.branch)), block_default.branch);
      add_unless_null(b, "prefix", f.prefix);
      if (f.dynamic) b.add(Value("dynamic"), Value(true));
      add_unless_null(b, "items", f.items);
      add_unless(b, "iteration", Value(f.iteration), block_default.iteration);
      add_unless(b, "record", Value(static_cast<long long>(f.record)), block_default.record);
      add_unless_null(b, "owner_path", f.owner_path);
      add_unless_null(b, "error", f.error);
      blocks.push_back(b.build());
    }
    ObjectBuilder b(11);
    b.add(Value("unit"), Value(a.unit));
    add_list(b, "steps", a.steps);
    add_list(b, "vars", a.vars);
    add_list(b, "inputs", a.inputs);
    add_unless_null(b, "input_object", a.input_object);
    add_list(b, "items", a.items);
    add_list(b, "outputs", a.outputs);
    add_unless(b, "call_record", Value(static_cast<long long>(a.call_record)), activation_default.call_record);
    add_unless_null(b, "call_path", a.call_path);
    add_unless_null(b, "prefix", a.prefix);
    b.add(Value("blocks"), Value::array(std::move(blocks)));
    stack_json.push_back(b.build());
  }
  Value parked_json;
  if (parked) {
    ObjectBuilder w(11);
    w.add(Value("kind"), Value(wait_kind(wait.kind)));
    add_unless(w, "deadline", Value(static_cast<long long>(wait.deadline)), wait_default.deadline);
    add_unless_null(w, "table", wait.table);
    add_unless_null(w, "sys_id", wait.sys_id);
    if (!wait.seen.is_null() && trigger_record.is_object() && wait.seen.same_storage(trigger_record)) {
      // The version the trigger carried (an approval waiting on its own request): not
      // written twice; read back from the trigger.
      w.add(Value("seen_is_trigger"), Value(true));
    } else {
      add_unless_null(w, "seen", wait.seen);
    }
    add_unless_null(w, "lock", wait.lock_name);
    add_unless(w, "weight", Value(static_cast<long long>(wait.weight)), wait_default.weight);
    add_unless(w, "max_duration", Value(static_cast<long long>(wait.max_duration)), wait_default.max_duration);
    add_unless(w, "max_attempts", Value(static_cast<long long>(wait.max_attempts)), wait_default.max_attempts);
    add_unless(w, "delay", Value(static_cast<long long>(wait.delay)), wait_default.delay);
    add_unless(w, "requested_at", Value(static_cast<long long>(wait.requested_at)), wait_default.requested_at);
    ObjectBuilder p(4);
    add_unless(p, "record", Value(static_cast<long long>(parked_record)), ExecState().parked_record);
    add_unless_null(p, "path", parked_path);
    add_list(p, "inputs", parked_inputs);
    p.add(Value("wait"), w.build());
    parked_json = p.build();
  }
  return Value::object({{"plan_version", Value(std::string_view(plan.version))},
                        {"started", Value(started)},
                        {"run_ms", Value(run_ms)},
                        {"stack", Value::array(std::move(stack_json))},
                        {"parked", parked_json}});
}

Result<ExecState> ExecState::from_value(const Value& v, const Plan& plan, const Value& trigger_record) {
  if (v["plan_version"].as_string() != plan.version) {
    return state_mismatch("written for plan " + std::string(v["plan_version"].as_string()) + ", not " + plan.version);
  }
  ExecState s;
  s.started = v["started"].as_bool();
  if (v["run_ms"].is_number()) s.run_ms = v["run_ms"].as_double();
  for (const Value& aj : v["stack"].items()) {
    Activation a;
    a.unit = static_cast<uint32_t>(aj["unit"].as_int());
    if (a.unit >= plan.units.size()) return state_mismatch("unit " + std::to_string(a.unit));
    const PlanUnit& unit = plan.units[a.unit];
    a.steps = list_of(aj["steps"]);
    a.vars = list_of(aj["vars"]);
    a.inputs = list_of(aj["inputs"]);
    a.input_object = aj["input_object"];
    a.items = list_of(aj["items"]);
    a.outputs = list_of(aj["outputs"]);
    read_int(aj["call_record"], &a.call_record);
    a.call_path = aj["call_path"];
    a.prefix = aj["prefix"];
    if (a.steps.size() != unit.step_ids.size() || a.vars.size() != unit.variable_names.size() ||
        a.items.size() != unit.max_loop_depth || a.outputs.size() != unit.outputs.size()) {
      return state_mismatch("slot counts of unit " + unit.id);
    }
    for (const Value& fj : aj["blocks"].items()) {
      BlockFrame f;
      int kind = fj["kind"].is_null() ? 0 : -1;  // left out: a body
      for (int k = 0; k < 5 && kind < 0; ++k) {
        if (fj["kind"].as_string() == kKinds[k]) kind = k;
      }
      if (kind < 0) return state_mismatch("block kind " + fj["kind"].to_json());
      f.kind = static_cast<BlockFrame::Kind>(kind);
      f.pc = static_cast<uint32_t>(fj["pc"].as_int());
      read_int(fj["branch"], &f.branch);
      f.prefix = fj["prefix"];
      f.dynamic = fj["dynamic"].as_bool();
      f.items = fj["items"];
      read_int(fj["iteration"], &f.iteration);
      read_int(fj["record"], &f.record);
      f.owner_path = fj["owner_path"];
      f.error = fj["error"];
      if (a.blocks.empty()) {
        if (f.kind != BlockFrame::Kind::kBody) return state_mismatch("the first block is not a body");
        f.block = &unit.body;
      } else {
        // The block was opened by the node its parent ran last.
        const Node* owner = node_before(a.blocks.back());
        if (!owner) return state_mismatch("no node opened a block");
        f.owner = owner;
        if (const auto* n = std::get_if<IfNode>(&owner->op); n && f.kind == BlockFrame::Kind::kBranch) {
          if (f.branch == BlockFrame::kElse) f.block = &n->else_block;
          else if (f.branch < n->branches.size()) f.block = &n->branches[f.branch];
        } else if (const auto* l = std::get_if<ForEachNode>(&owner->op); l && f.kind == BlockFrame::Kind::kLoop) {
          f.block = &l->body;
        } else if (const auto* t = std::get_if<TryNode>(&owner->op)) {
          if (f.kind == BlockFrame::Kind::kTry) f.block = &t->body;
          if (f.kind == BlockFrame::Kind::kCatch) f.block = &t->handler;
        }
        if (!f.block) return state_mismatch("block at " + std::string(f.owner_path.as_string()));
      }
      if (f.pc > f.block->size()) return state_mismatch("position past the end of a block");
      a.blocks.push_back(std::move(f));
    }
    if (a.blocks.empty()) return state_mismatch("a unit without blocks");
    if (!s.stack.empty()) {
      const Node* call = node_before(s.stack.back().blocks.back());
      if (!call || !std::holds_alternative<ActionStep>(call->op)) return state_mismatch("no call step for unit " + unit.id);
      a.call_node = call;
    }
    s.stack.push_back(std::move(a));
  }
  const Value& pj = v["parked"];
  if (!pj.is_null()) {
    if (s.stack.empty()) return state_mismatch("parked without a position");
    s.parked = true;
    s.parked_node = node_before(s.stack.back().blocks.back());
    if (!s.parked_node || !std::holds_alternative<ActionStep>(s.parked_node->op)) return state_mismatch("parked step");
    read_int(pj["record"], &s.parked_record);
    s.parked_path = pj["path"];
    s.parked_inputs.assign(pj["inputs"].items().begin(), pj["inputs"].items().end());
    const std::string_view kind = pj["wait"]["kind"].as_string();
    s.wait.kind = kind == "timer"    ? WaitRequest::Kind::kTimer
                  : kind == "record" ? WaitRequest::Kind::kRecord
                  : kind == "lock"   ? WaitRequest::Kind::kLock
                                     : WaitRequest::Kind::kNone;
    const Value& w = pj["wait"];
    read_int(w["deadline"], &s.wait.deadline);
    s.wait.table = w["table"];
    s.wait.sys_id = w["sys_id"];
    if (w["seen_is_trigger"].as_bool()) {
      if (!trigger_record.is_object()) return state_mismatch("a wait's record version is its trigger's, and there is none");
      s.wait.seen = trigger_record;
    } else {
      s.wait.seen = w["seen"];
    }
    s.wait.lock_name = w["lock"];
    read_int(w["weight"], &s.wait.weight);
    read_int(w["max_duration"], &s.wait.max_duration);
    read_int(w["max_attempts"], &s.wait.max_attempts);
    read_int(w["delay"], &s.wait.delay);
    read_int(w["requested_at"], &s.wait.requested_at);
    if (s.wait.kind == WaitRequest::Kind::kLock && !s.wait.lock_name.is_string()) return state_mismatch("a lock wait without a name");
  }
  return s;
}

}  // namespace flowrt
