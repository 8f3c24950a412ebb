#include "tests/store/crash/crash_workload.h"

#include <random>

namespace flowrt::crash {

const char* op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::kInsertItem: return "insert_item";
    case OpKind::kUpdateItem: return "update_item";
    case OpKind::kDeleteItem: return "delete_item";
    case OpKind::kInsertRequest: return "insert_request";
    case OpKind::kDecide: return "decide";
    case OpKind::kPing: return "ping";
    case OpKind::kCallJob: return "call_job";
    case OpKind::kAdvance: return "advance";
  }
  return "?";
}

std::vector<Member> members_of(const Value& object) {
  std::vector<Member> m;
  for (MemberRef f : object.members()) m.push_back(Member{f.key, f.value});
  return m;
}

namespace {

constexpr DurationMs kMinute = 60 * 1000;

// Applies one op to the op tables.
void apply_op(const Op& op, OpTables& t) {
  switch (op.kind) {
    case OpKind::kInsertItem:
    case OpKind::kInsertRequest: {
      std::vector<Member> m{Member{Value("sys_id"), Value(op.sys_id)}};
      for (const Member& f : members_of(op.values)) m.push_back(f);
      t[op.table][op.sys_id] = Value::object(std::move(m));
      break;
    }
    case OpKind::kUpdateItem:
    case OpKind::kDecide: {
      Value& r = t[op.table][op.sys_id];
      std::vector<Member> m = members_of(r);
      for (const Member& f : members_of(op.values)) {
        bool found = false;
        for (Member& old : m) {
          if (old.key == f.key) {
            old.value = f.value;
            found = true;
          }
        }
        if (!found) m.push_back(f);
      }
      r = Value::object(std::move(m));
      break;
    }
    case OpKind::kDeleteItem: t[op.table].erase(op.sys_id); break;
    default: break;
  }
}

}  // namespace

std::vector<Op> make_workload(uint64_t seed, int count) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 1);
  auto draw = [&](int lo, int hi) { return static_cast<int>(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  std::vector<Op> ops;
  OpTables t;
  DurationMs at = 0;
  // Weights per kind, in OpKind order.
  const std::vector<int> weights{3, 2, 1, 2, 2, 1, 1, 2};
  int total = 0;
  for (int w : weights) total += w;
  while (static_cast<int>(ops.size()) < count) {
    Op op;
    op.n = static_cast<int>(ops.size()) + 1;
    int pick = draw(0, total - 1);
    size_t k = 0;
    while (pick >= weights[k]) pick -= weights[k++];
    op.kind = static_cast<OpKind>(k);
    const long long n = op.n;
    std::vector<std::string> pending;
    for (const auto& [id, r] : t["request"]) {
      if (r["approval"] == Value("pending")) pending.push_back(id);
    }
    switch (op.kind) {
      case OpKind::kInsertItem:
        op.table = "item";
        op.sys_id = "i" + std::to_string(n);
        op.values = Value::object({{"op", Value(n)}, {"v", Value(static_cast<long long>(draw(0, 999)))}});
        break;
      case OpKind::kUpdateItem:
      case OpKind::kDeleteItem: {
        if (t["item"].empty()) continue;
        auto it = t["item"].begin();
        std::advance(it, draw(0, static_cast<int>(t["item"].size()) - 1));
        op.table = "item";
        op.sys_id = it->first;
        if (op.kind == OpKind::kUpdateItem) {
          op.values = Value::object({{"v", Value(static_cast<long long>(draw(0, 999)))}, {"last_op", Value(n)}});
        }
        break;
      }
      case OpKind::kInsertRequest:
        op.table = "request";
        op.sys_id = "q" + std::to_string(n);
        op.values = Value::object({{"op", Value(n)},
                                   {"res", Value(static_cast<long long>(draw(0, 2) / 2))},  // res-0 twice as often: queues
                                   {"approval", Value("pending")}});
        break;
      case OpKind::kDecide:
        if (pending.empty()) continue;
        op.table = "request";
        op.sys_id = pending[static_cast<size_t>(draw(0, static_cast<int>(pending.size()) - 1))];
        op.values = Value::object({{"approval", Value(draw(0, 1) ? "yes" : "no")}, {"last_op", Value(n)}});
        break;
      case OpKind::kPing:
      case OpKind::kCallJob: op.values = Value::object({{"op", Value(n)}}); break;
      case OpKind::kAdvance:
        at += draw(1, 40) * kMinute;
        op.at = at;
        break;
    }
    apply_op(op, t);
    ops.push_back(std::move(op));
  }
  return ops;
}

OpTables model_after(const std::vector<Op>& ops, int done) {
  OpTables t;
  t["item"];
  t["request"];
  for (int i = 0; i < done && i < static_cast<int>(ops.size()); ++i) apply_op(ops[static_cast<size_t>(i)], t);
  return t;
}

DurationMs final_target(const std::vector<Op>& ops) {
  DurationMs at = 0;
  for (const Op& op : ops) {
    if (op.kind == OpKind::kAdvance) at = op.at;
  }
  // Past every wait: a request may queue for its lock up to 27m21s, then wait 50m.
  return at + 8 * 60 * kMinute;
}

const std::vector<FlowTable>& flow_tables() {
  static const std::vector<FlowTable> tables{
      {"audit", {"item"}},
      {"note", {"kind", "item", "op"}},
      {"grant", {"request"}},
      {"outcome", {"request"}},
      {"tick", {"at"}},
  };
  return tables;
}

const char* definitions() {
  return R"([
  {"id": "stamp", "type": "subflow",
   "inputs": [{"name": "item", "type": "string", "required": true}, {"name": "v", "type": "integer"}],
   "outputs": [{"name": "text", "type": "string"}],
   "actions": [
     {"action": "create_record", "inputs": {"table": "note", "values": {"kind": "stamp", "item": "{{inputs.item}}"}}},
     {"action": "assign_outputs", "inputs": {"values": {"text": "{{inputs.item}}:{{inputs.v}}"}}}]},
  {"id": "audit_item", "trigger": {"type": "record", "table": "item", "when": "created"},
   "actions": [
     {"id": "s", "action": "call_subflow", "inputs": {"subflow": "stamp", "inputs": {"item": "{{trigger.sys_id}}", "v": "{{trigger.record.v}}"}}},
     {"action": "create_record", "inputs": {"table": "audit", "values": {"item": "{{trigger.sys_id}}", "stamp": "{{steps.s.text}}"}}}]},
  {"id": "hold_request", "trigger": {"type": "record", "table": "request", "when": "created"},
   "actions": [
     {"id": "lk", "action": "lock", "inputs": {"key": "res-{{trigger.record.res}}", "max_duration": "30m", "max_attempts": 4, "delay": 547000}},
     {"action": "create_record", "inputs": {"table": "grant", "values": {"request": "{{trigger.sys_id}}", "token": "{{steps.lk.token}}"}}},
     {"id": "w", "action": "wait_for_condition", "inputs": {"table": "request", "sys_id": "{{trigger.sys_id}}",
       "condition": {"field": "approval", "op": "in", "value": ["yes", "no"]}, "timeout": "50m"}},
     {"id": "side", "action": "crash_side_effect", "inputs": {"key": "{{trigger.sys_id}}"}},
     {"id": "out", "action": "create_record", "on_error": "continue", "inputs": {"table": "outcome", "while_holding": "res-{{trigger.record.res}}",
       "values": {"request": "{{trigger.sys_id}}", "timed_out": "{{steps.w.timed_out}}", "token": "{{steps.lk.token}}"}}},
     {"action": "unlock", "inputs": {"key": "res-{{trigger.record.res}}"}}]},
  {"id": "ping_wait", "trigger": {"type": "event", "name": "ping"},
   "actions": [
     {"action": "wait", "inputs": {"duration": "20m"}},
     {"action": "create_record", "inputs": {"table": "note", "values": {"kind": "ping", "op": "{{trigger.payload.op}}"}}}]},
  {"id": "api_job", "trigger": {"type": "api"}, "inputs": [{"name": "op", "type": "integer", "required": true}],
   "actions": [
     {"id": "side", "action": "crash_side_effect", "inputs": {"key": "job-{{inputs.op}}"}},
     {"action": "create_record", "inputs": {"table": "note", "values": {"kind": "job", "op": "{{inputs.op}}"}}}]},
  {"id": "tick", "trigger": {"type": "schedule", "every": "30m"},
   "actions": [
     {"action": "create_record", "inputs": {"table": "tick", "values": {"at": "{{trigger.time}}"}}}]}
])";
}

}  // namespace flowrt::crash
