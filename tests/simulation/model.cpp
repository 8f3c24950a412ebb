// Model, the commit half: which operation or step made each commit, the record it must
// produce, and the tables (model_triggers.cpp: the starts and skips a commit implies).
#include "tests/simulation/model.h"

#include <algorithm>

#include "runtime/record_json.h"
#include "tests/simulation/model_rules.h"
#include "tests/simulation/sim_json.h"
#include "triggers/schedule.h"

namespace flowrt::sim {
namespace {

using namespace model_rules;  // NOLINT: the commit half's own helpers

bool where_holds(const Value& where, const Value& record) {
  return model_compare(where["op"].as_string(), record[where["field"].as_string()], where["value"], Value());
}

TriggerSpec schedule_spec(const FlowSpec& f) {
  TriggerSpec t;
  t.type = TriggerType::kSchedule;
  if (f.at) {
    t.repeating = false;
    t.start = *f.at;
  } else {
    t.repeating = true;
    t.every = f.every;
    t.has_start = f.start.has_value();
    t.start = f.start.value_or(0);
  }
  return t;
}

}  // namespace

Model::Model(const Scenario& s)
    : s_(s), threads_(s.variant != Variant::kSimulated), real_clock_(s.variant == Variant::kRealClock) {
  DriverState st;
  for (const FlowSpec& f : s.flows) st.active[f.id] = true;
  for (const auto& [id, versions] : s.versions) st.published[id] = 0;
  st.recursion_limit = s.recursion_limit;
  states_.push_back(st);
}

void Model::loaded(TimeMs now) {
  for (const FlowSpec& f : s_.flows) {
    if (f.kind != FlowSpec::Kind::kSchedule) continue;
    activated_at_[f.id] = now;
    next_tick_[f.id] = next_occurrence(schedule_spec(f), now, now);
  }
}

void Model::check_commit_seqs(const std::function<uint64_t(const std::string&)>& commit_seq_of, Violations* out) {
  for (; commit_seqs_checked_ < ctx_order_.size(); ++commit_seqs_checked_) {
    const Ctx& x = ctxs_.at(ctx_order_[commit_seqs_checked_]);
    const uint64_t got = commit_seq_of(x.id);
    if (got != x.start_commit) {
      add(out, kInvD, x.id + " carries commit_seq " + std::to_string(got) + ", but commit " + std::to_string(x.start_commit) + " queued it");
    }
  }
}

TrafficView Model::view() const {
  TrafficView v;
  for (const std::string& t : s_.tables) {
    auto it = tables_.find(t);
    v.sys_ids[t] = it == tables_.end() ? std::vector<std::string>() : it->second.order;
  }
  v.contexts = next_seq_ - 1;
  v.active = states_.back().active;
  v.published = states_.back().published;
  return v;
}

// ---- outside operations ----

void Model::begin_op(const Op& op, uint64_t commit_before, TimeMs now) {
  PendingOp p;
  p.op = op;
  p.index = ops_.size();
  p.before = commit_before;
  p.at = now;
  if (op.kind == Op::Kind::kAdvance) {
    // The schedule ticks the advance must fire: every occurrence up to its end, in time
    // order (one that fell due during a settle fires now, with its own time).
    const TimeMs target = now + op.duration;
    due_ticks_.clear();
    for (auto& [flow, next] : next_tick_) {
      const FlowSpec* f = s_.flow(flow);
      while (next && *next <= target) {
        due_ticks_.emplace_back(*next, flow);
        next = next_occurrence(schedule_spec(*f), activated_at_[flow], *next + 1);
      }
    }
    std::sort(due_ticks_.begin(), due_ticks_.end());
  }
  ops_.push_back(std::move(p));
}

void Model::end_op(const OpOutcome& outcome, uint64_t commit_after, TimeMs now) {
  PendingOp& p = ops_.back();
  p.after = commit_after;
  p.outcome = outcome;
  DriverState st = states_.back();
  const Op& op = p.op;
  auto arm = [&](const std::string& flow) {
    const FlowSpec* f = s_.flow(flow);
    if (f && f->kind == FlowSpec::Kind::kSchedule) next_tick_[flow] = next_occurrence(schedule_spec(*f), activated_at_[flow], now);
  };
  if (outcome.ok) {
    switch (op.kind) {
      case Op::Kind::kActivate: {
        const bool was = st.active[op.flow];
        if (auto d = st.drafts.find(op.flow); d != st.drafts.end()) {
          st.published[op.flow] = d->second;
          st.drafts.erase(d);
        }
        st.active[op.flow] = true;
        if (!was) {
          activated_at_[op.flow] = now;
          arm(op.flow);
        }
        break;
      }
      case Op::Kind::kDeactivate:
        st.active[op.flow] = false;
        if (next_tick_.count(op.flow)) next_tick_[op.flow].reset();
        break;
      case Op::Kind::kSave: st.drafts[op.flow] = op.version; break;
      case Op::Kind::kPublish:
        if (auto d = st.drafts.find(op.flow); d != st.drafts.end()) {
          st.published[op.flow] = d->second;
          st.drafts.erase(d);
        }
        break;
      case Op::Kind::kSetProperty:
        if (op.name == "indirect_recursion_limit") st.recursion_limit = op.values.as_int();
        if (op.name == "max_iterations") st.max_iterations = op.values.as_int();
        break;
      default: break;
    }
  }
  states_.push_back(std::move(st));
}

// ---- where a commit stands among the operations ----

size_t Model::op_at(uint64_t commit) const {
  // The operation during which the commit happened, or the first one after it.
  size_t lo = 0, hi = ops_.size();
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (ops_[mid].after < commit) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

std::vector<Model::DriverState> Model::states_at(uint64_t commit, uint64_t since) const {
  // Operation i's effect comes between its `before` and `after`: a commit inside that
  // range may have seen the state before or after it. A write looks at which flows are
  // active before it takes its commit sequence number, at any moment after `since`.
  // On real threads a commit is published (Dispatcher::last_commit) only as it ends, so the
  // driver may read an operation's `after` while the next commit, already under the lock,
  // has read the state from before that operation: commit N+1 may have seen any state
  // since commit N.
  const size_t i = op_at(commit);
  size_t first = since == 0 ? i : op_at(std::min(since, commit));
  if (threads_ && commit > 1) first = std::min(first, op_at(commit - 1));
  if (i >= ops_.size() && first >= ops_.size()) return {states_.back()};
  std::vector<DriverState> out;
  const size_t last = i >= ops_.size() ? states_.size() - 1 : (ops_[i].before < commit ? i + 1 : i);
  for (size_t k = std::min(first, last); k <= last; ++k) out.push_back(states_[k]);
  return out;
}

std::vector<const Model::DriverState*> Model::states_for(const Ctx& x) const {
  if (!threads_) return {&states_.back()};
  std::vector<const DriverState*> out;
  for (size_t i = std::min(op_at(x.start_commit), states_.size() - 1); i < states_.size(); ++i) out.push_back(&states_[i]);
  return out;
}

const std::vector<Model::Version>* Model::history(const std::string& table, const std::string& sys_id) const {
  auto t = tables_.find(table);
  if (t == tables_.end()) return nullptr;
  auto h = t->second.history.find(sys_id);
  return h == t->second.history.end() ? nullptr : &h->second;
}

const Value* Model::current(const std::string& table, const std::string& sys_id) const {
  auto t = tables_.find(table);
  if (t == tables_.end()) return nullptr;
  auto r = t->second.rows.find(sys_id);
  return r == t->second.rows.end() ? nullptr : &r->second;
}

// ---- commits ----

void Model::checkpoint(std::vector<CommitRecord> commits, const Snapshot& snap, const CommitLog& log, bool quiescent,
                       Violations* out) {
  for (const CommitRecord& c : commits) {
    if (!out->empty()) return;
    if (c.seq != last_commit_ + 1) {
      add(out, kInvD, "commit sequence numbers are not consecutive: " + std::to_string(last_commit_) + " then " + std::to_string(c.seq));
    }
    last_commit_ = c.seq;
    process(c, snap, log, out);
  }
  // Outside operations that ended without (all) their commits.
  for (PendingOp& p : ops_) {
    if (p.done || p.after == UINT64_MAX || p.after > last_commit_) continue;
    p.done = true;
    const Op& op = p.op;
    const std::string what = "operation #" + std::to_string(p.index + 1) + " (" + op.describe() + ")";
    size_t want = 0;
    switch (op.kind) {
      case Op::Kind::kInsert:
      case Op::Kind::kFireEvent: want = 1; break;
      case Op::Kind::kCallFlow: {
        const FlowSpec* f = s_.flow(op.flow);
        want = f && f->kind == FlowSpec::Kind::kApi && states_[p.index].active.at(op.flow) ? 1 : 0;
        break;
      }
      case Op::Kind::kTestFlow: want = p.outcome.ok ? 1 : 0; break;
      case Op::Kind::kUpdate:
      case Op::Kind::kDelete: want = p.outcome.ok ? 1 : 0; break;
      case Op::Kind::kUpdateWhere:
      case Op::Kind::kDeleteWhere: want = p.commits; break;
      case Op::Kind::kAdvance: want = p.commits; break;
      default: break;
    }
    if (p.commits != want) add(out, kInvA, what + " made " + std::to_string(p.commits) + " commits, want " + std::to_string(want));
    if (op.kind == Op::Kind::kAdvance && !due_ticks_.empty()) {
      add(out, kInvA, what + " did not fire the tick of " + due_ticks_.front().second + " due at " + format_time(due_ticks_.front().first));
    }
    if ((op.kind == Op::Kind::kUpdateWhere || op.kind == Op::Kind::kDeleteWhere) && p.outcome.ok &&
        p.outcome.value.as_int() != static_cast<int64_t>(p.commits)) {
      add(out, kInvA, what + " reported " + p.outcome.value.to_json() + " records but committed " + std::to_string(p.commits));
    }
    if ((op.kind == Op::Kind::kUpdate || op.kind == Op::Kind::kDelete) && !p.outcome.ok) {
      // Refused: the record must have been gone at some moment of the operation. The
      // model's table after it is the last such moment it knows.
      const auto t = tables_.find(op.table);
      const bool gone = t == tables_.end() || !t->second.history.count(op.sys_id) ||
                        t->second.history.at(op.sys_id).back().record.is_null();
      if (!gone) add(out, kInvA, what + " failed (" + p.outcome.error + ") although the record exists");
    }
    if (op.kind == Op::Kind::kUpdateMissing && p.outcome.ok) add(out, kInvA, what + ": an update of a missing record succeeded");
  }
  if (!out->empty()) return;
  if (quiescent) {
    for (const std::string& id : ctx_order_) {
      Ctx& x = ctxs_.at(id);
      replay(x, snap, false, out);
      if (!out->empty()) return;
      if (!x.pending.empty()) {
        const Value* r = snap.context(id);
        add(out, kInvE, id + " completed step " + str((*r)["steps"].at(x.pending.front().index)["path"]) +
                            " (a write, event or start) but nothing was committed for it (a lost write)", *r);
      }
    }
    lock_checks(snap, quiescent, out);
  }
  if (!quiescent) return;  // a partial snapshot: the contexts just started, the skipped list
  // Every context the engine has, the model has, and in seq order.
  if (snap.contexts.size() != ctx_order_.size()) {
    add(out, kInvA, "the engine has " + std::to_string(snap.contexts.size()) + " contexts, the model explains " +
                        std::to_string(ctx_order_.size()));
  }
  // Every skipped start is explained by a commit or a step.
  size_t commit_skips = 0, call_skips = 0;
  for (const Value& k : snap.skipped) (k["event"]["type"].as_string() == "call" ? call_skips : commit_skips)++;
  if (commit_skips != skipped_seen_) {
    add(out, kInvA, "the engine lists " + std::to_string(commit_skips) + " skipped starts of commits, the model explains " +
                        std::to_string(skipped_seen_));
  }
  if (call_skips != call_skips_seen_) {
    add(out, kInvA, "the engine lists " + std::to_string(call_skips) + " skipped subflow calls, the model explains " +
                        std::to_string(call_skips_seen_));
  }
  check_tables(snap, out);
}

void Model::process(const CommitRecord& c, const Snapshot& snap, const CommitLog& log, Violations* out) {
  if (c.origin.empty()) {
    outside_commit(c, snap, log, out);
  } else {
    context_commit(c, snap, log, out);
  }
}

Value Model::apply_write(const CommitRecord& c, const std::string& op, const std::string& sys_id, const Value& values,
                         const std::string& what, Violations* out) {
  Table& t = tables_[c.table];
  const std::string kind = kind_name(c.kind);
  if (kind != op) {
    add(out, kInvE, what + " should make a commit of kind " + op + ", the engine's is " + kind, c.record);
    return Value();
  }
  if (str(c.record["sys_id"]) != sys_id && op != "insert") {
    add(out, kInvE, what + " wrote " + c.table + "/" + str(c.record["sys_id"]) + ", the model expects " + sys_id, c.record);
    return Value();
  }
  Value record;
  if (op == "insert") {
    if (t.rows.count(sys_id)) add(out, kInvE, what + " inserted " + sys_id + ", which is already in " + c.table);
    record = inserted(values, c.record["sys_id"], c.at);
    t.order.push_back(sys_id);
    t.rows[sys_id] = record;
  } else {
    auto row = t.rows.find(sys_id);
    if (row == t.rows.end()) {
      add(out, kInvE, what + " " + op + "d " + c.table + "/" + sys_id + ", which the model does not hold (deleted or never written)", c.record);
      return Value();
    }
    if (op == "update") {
      if (!(c.previous == row->second)) {
        add(out, kInvE, what + ": the engine updated from a version that is not the current one: model " + row->second.to_json(), c.previous);
      }
      bool changed = false;
      record = updated(row->second, values, c.at, &changed);
      row->second = record;
    } else {
      record = row->second;
      t.rows.erase(row);
      t.order.erase(std::find(t.order.begin(), t.order.end(), sys_id));
    }
  }
  if (real_clock_ && op != "delete" && !record.is_null()) {
    // On the real clock the record's times are the clock when it was built, a moment
    // before the commit: the model takes them from the engine.
    record = record.with("sys_updated_on", c.record["sys_updated_on"]);
    if (op == "insert") record = record.with("sys_created_on", c.record["sys_created_on"]);
    t.rows[sys_id] = record;
  }
  if (!(record == c.record)) {
    add(out, kInvE, what + ": the engine's record differs from the model's " + record.to_json(), c.record);
  }
  t.history[sys_id].push_back(Version{c.seq, c.at, op == "delete" ? Value() : record});
  if (op == "delete") {
    // `once` forgets a deleted record (one inserted later with its sys_id is new).
    const std::string suffix = "|" + c.table + "|" + sys_id;
    for (auto it = once_ran_.begin(); it != once_ran_.end();) it = it->ends_with(suffix) ? once_ran_.erase(it) : std::next(it);
  }
  return record;
}

void Model::outside_commit(const CommitRecord& c, const Snapshot& snap, const CommitLog& log, Violations* out) {
  const size_t i = op_at(c.seq);
  if (i >= ops_.size() || ops_[i].before >= c.seq) {
    add(out, kInvA, "commit " + std::to_string(c.seq) + " (" + kind_name(c.kind) + ") has no origin and no operation made it", c.record);
    return;
  }
  PendingOp& p = ops_[i];
  const Op& op = p.op;
  const std::string what = "operation #" + std::to_string(i + 1) + " (" + op.describe() + ")";
  ++p.commits;
  Value trigger, inputs = Value::empty_object();
  bool has_previous = false;
  std::vector<Expect> expected;
  bool test = false;
  switch (op.kind) {
    case Op::Kind::kInsert: {
      const Value r = apply_write(c, "insert", str(c.record["sys_id"]), op.values, what, out);
      if (p.outcome.ok && !(p.outcome.value == r)) add(out, kInvE, what + " returned a record that is not the one committed", p.outcome.value);
      record_starts(c, "insert", r, Value(), nullptr, log, &expected);
      trigger = r;
      break;
    }
    case Op::Kind::kUpdate:
    case Op::Kind::kUpdateWhere:
    case Op::Kind::kDelete:
    case Op::Kind::kDeleteWhere: {
      const bool del = op.kind == Op::Kind::kDelete || op.kind == Op::Kind::kDeleteWhere;
      std::string sys_id = op.sys_id;
      if (op.kind == Op::Kind::kUpdateWhere || op.kind == Op::Kind::kDeleteWhere) {
        if (p.commits == 1) {  // the records it matches at its first commit, in insertion order
          const Table& t = tables_[op.table];
          for (const std::string& id : t.order) {
            if (where_holds(op.where, t.rows.at(id))) p.targets.push_back(id);
          }
        }
        if (p.commits > p.targets.size()) {
          add(out, kInvA, what + " made more commits than the " + std::to_string(p.targets.size()) + " records it matches", c.record);
          return;
        }
        sys_id = p.targets[p.commits - 1];
      }
      const Value* prev = current(op.table, sys_id);
      const Value previous = prev ? *prev : Value();
      const Value r = apply_write(c, del ? "delete" : "update", sys_id, op.values, what, out);
      if (!out->empty()) return;
      if (op.kind == Op::Kind::kUpdate || op.kind == Op::Kind::kDelete) {
        if (p.outcome.ok && !(p.outcome.value == r)) add(out, kInvE, what + " returned a record that is not the one committed", p.outcome.value);
      }
      record_starts(c, del ? "delete" : "update", r, previous, nullptr, log, &expected);
      trigger = r;
      has_previous = !del;
      if (has_previous) trigger = Value::object({{"record", r}, {"previous", previous}});
      break;
    }
    case Op::Kind::kFireEvent:
      if (c.kind != CommitEntry::Kind::kEvent || !(c.event == Value(op.name))) {
        add(out, kInvA, what + " committed " + kind_name(c.kind) + " " + c.event.to_json());
        return;
      }
      event_starts(c, op.name, nullptr, log, &expected);
      trigger = op.payload;
      break;
    case Op::Kind::kCallFlow:
    case Op::Kind::kTestFlow: {
      if (c.kind != CommitEntry::Kind::kStart) {
        add(out, kInvA, what + " committed a " + std::string(kind_name(c.kind)));
        return;
      }
      expected.push_back(Expect{op.flow, true, {}, op.kind == Op::Kind::kCallFlow ? "call_flow" : "test_flow"});
      inputs = op.kind == Op::Kind::kCallFlow || op.table.empty() ? op.values : Value::empty_object();
      test = op.kind == Op::Kind::kTestFlow;
      if (test && !op.table.empty()) {
        const Value* r = current(op.table, op.sys_id);
        trigger = r ? *r : Value();
        // On real threads test_flow reads the record when called, and a context's write
        // to it may commit before the test's start does: the version it read is right if
        // it was current at some moment since the operation began.
        if (threads_ && c.started.size() == 1 && !(c.started[0].trigger_record == trigger)) {
          const Value& read = c.started[0].trigger_record;
          if (const auto* h = history(op.table, op.sys_id)) {
            for (size_t v = 0; v < h->size(); ++v) {
              const bool current_since = (*h)[v].commit > p.before || v + 1 == h->size() || (*h)[v + 1].commit > p.before;
              if (current_since && (*h)[v].record == read) trigger = read;
            }
          }
        }
      }
      break;
    }
    case Op::Kind::kAdvance: {
      // A schedule tick: the next one due.
      if (c.kind != CommitEntry::Kind::kStart || c.started.size() != 1) {
        add(out, kInvA, what + " made a " + std::string(kind_name(c.kind)) + " commit that is not a schedule tick");
        return;
      }
      const std::string flow = c.started[0].flow;
      // Ticks come in time order, across flows too: the fired tick is one of the earliest
      // still due (flows due at the same instant may fire in any order among themselves).
      auto it = std::find_if(due_ticks_.begin(), due_ticks_.end(), [&](const auto& t) { return t.second == flow; });
      if (it == due_ticks_.end()) {
        add(out, kInvA, what + " fired a tick of " + flow + " that the model did not expect");
        return;
      }
      if (it->first != due_ticks_.front().first) {
        add(out, kInvA, what + " fired the tick of " + flow + " due at " + format_time(it->first) + " before the tick of " +
                            due_ticks_.front().second + " due at " + format_time(due_ticks_.front().first));
        return;
      }
      if (!(c.record.is_null()) || str(snap.context(c.started[0].id) ? (*snap.context(c.started[0].id))["trigger"]["time"] : Value()) !=
                                       format_time(it->first)) {
        add(out, kInvA, what + " fired a tick of " + flow + " for another time than its next one, " + format_time(it->first),
            snap.context(c.started[0].id) ? *snap.context(c.started[0].id) : Value());
        return;
      }
      trigger = Value(std::string_view(format_time(it->first)));
      due_ticks_.erase(it);
      expected.push_back(Expect{flow, true, {}, "schedule tick"});
      count("schedule ticks");
      break;
    }
    default:
      add(out, kInvA, what + " should commit nothing, but made commit " + std::to_string(c.seq) + " (" + kind_name(c.kind) + ")");
      return;
  }
  if (!out->empty()) return;
  // Starts of this commit, then the contexts' trigger data as the model knows it.
  match_starts(c, expected, nullptr, trigger, snap, what, out);
  for (const CommitRecord::Started& st : c.started) {
    Value t;
    if (op.kind == Op::Kind::kAdvance) {
      t = Value::object({{"type", "schedule"}, {"time", trigger}});
    } else if (op.kind == Op::Kind::kFireEvent) {
      t = Value::object({{"type", "event"}, {"name", Value(op.name)}, {"payload", op.payload}, {"time", Value(std::string_view(format_time(c.at)))}});
    } else if (op.kind == Op::Kind::kCallFlow || (op.kind == Op::Kind::kTestFlow && op.table.empty())) {
      const FlowSpec* f = s_.flow(op.flow);
      std::string type = "api";
      if (test && f && f->kind == FlowSpec::Kind::kEvent) type = "event";
      if (test && f && f->kind == FlowSpec::Kind::kSchedule) type = "schedule";
      t = Value::object({{"type", Value(type)}, {"payload", test ? op.values : Value()}, {"time", Value(std::string_view(format_time(c.at)))}});
    } else {
      const FlowSpec* f = s_.flow(st.flow);
      std::string operation = kind_name(c.kind);
      Value record = has_previous ? trigger["record"] : trigger;
      Value previous = has_previous ? trigger["previous"] : Value();
      if (test) {
        operation = f->when == "created" ? "insert" : f->when == "deleted" ? "delete" : "update";
        previous = operation == "update" ? record : Value();
      }
      t = Value::object({{"type", "record"}, {"table", Value(op.table)}, {"operation", Value(operation)},
                         {"sys_id", record["sys_id"]}, {"record", record}, {"previous", previous},
                         {"time", Value(std::string_view(format_time(c.at)))}});
      start_context(st, c, nullptr, t, !previous.is_null() || operation == "update", inputs, test);
      continue;
    }
    start_context(st, c, nullptr, t, false, inputs, test);
  }
}

void Model::context_commit(const CommitRecord& c, const Snapshot& snap, const CommitLog& log, Violations* out) {
  auto it = ctxs_.find(c.origin);
  if (it == ctxs_.end()) {
    add(out, kInvA, "commit " + std::to_string(c.seq) + " comes from " + c.origin + ", which the model never saw start");
    return;
  }
  Ctx& x = it->second;
  if (x.pending.empty()) replay(x, snap, true, out);
  if (!out->empty()) return;
  if (x.pending.empty()) {
    add(out, kInvA, "commit " + std::to_string(c.seq) + " (" + kind_name(c.kind) + " " + c.table + ") comes from " + x.id +
                        ", but no completed write, event or start step of it is left to explain it",
        snap.context(x.id) ? *snap.context(x.id) : Value());
    return;
  }
  const PendingWrite pw = x.pending.front();
  x.pending.erase(x.pending.begin());
  const Value* record = snap.context(x.id);
  const Value& step = (*record)["steps"].at(pw.index);
  const std::string what = x.id + " step " + str(step["path"]) + " (" + str(step["action"]) + ")";
  Frame& f = x.frames.at(pw.frame);
  const Value& w = pw.write;
  const std::string kind = str(w["kind"]);
  std::vector<Expect> expected;
  Value trigger;
  bool has_previous = false;
  if (kind == "insert" || kind == "update" || kind == "delete") {
    const std::string table = str(w["table"]);
    if (c.table != table) {
      add(out, kInvE, what + " should write table " + table + ", the engine's commit is on " + c.table, c.record);
      return;
    }
    std::string sys_id = kind == "insert" ? str(c.record["sys_id"]) : str(w["sys_id"]);
    if (!w["check_current"].is_null()) {
      // A record read under a lock (the counter pattern): nobody else wrote it since.
      const Value* now = current(table, sys_id);
      if (!now || !(*now == w["check_current"])) {
        add(out, "(e) counters (mutual exclusion)",
            what + " writes from a read of " + table + "/" + sys_id + " made under its lock, but the record changed in between: read " +
                w["check_current"].to_json() + ", now " + (now ? now->to_json() : std::string("(gone)")),
            *record);
        return;
      }
    }
    const Value* prev = current(table, sys_id);
    const Value previous = prev ? *prev : Value();
    const Value r = apply_write(c, kind, sys_id, w["values"], what, out);
    if (!out->empty()) return;
    if (kind != "delete" && step["action"].as_string() != "sim_stamp" && !step["outputs"]["record"].is_null() &&
        !(step["outputs"]["record"] == r)) {
      add(out, kInvE, what + "'s output record differs from the model's " + r.to_json(), step);
    }
    if (step["action"].as_string() == "create_record" || step["action"].as_string() == "sim_stamp") {
      f.steps[str(w["id"])] = step["action"].as_string() == "create_record"
                                        ? Value::object({{"record", r}, {"sys_id", r["sys_id"]}})
                                        : Value::object({{"sys_id", r["sys_id"]}});
    }
    record_starts(c, kind, r, previous, &x, log, &expected);
    trigger = r;
    has_previous = kind == "update";
    if (has_previous) trigger = Value::object({{"record", r}, {"previous", previous}});
  } else if (kind == "event") {
    if (c.kind != CommitEntry::Kind::kEvent || !(c.event == w["name"])) {
      add(out, kInvA, what + " should commit event " + w["name"].to_json() + ", the engine committed " + kind_name(c.kind) + " " + c.event.to_json());
      return;
    }
    event_starts(c, str(w["name"]), &x, log, &expected);
    trigger = w["payload"];
  } else if (kind == "start") {
    if (c.kind != CommitEntry::Kind::kStart) {
      add(out, kInvA, what + " should commit a start, the engine committed " + std::string(kind_name(c.kind)));
      return;
    }
    Expect e{str(w["flow"]), true, {}, "start_flow " + str(w["flow"]) + " at " + str(step["path"])};
    const FlowSpec* fs = s_.flow(e.flow);
    if (fs) rules(c, *fs, &x, "", "", log, &e);
    expected.push_back(e);
    // The step's outputs say whether it started a context.
    const Value& o = step["outputs"];
    const bool skipped = o["skipped"].as_bool();
    if (skipped != c.started.empty() || (!skipped && !(o["context_id"] == Value(c.started.empty() ? std::string() : c.started[0].id)))) {
      add(out, kInvA, what + " outputs " + o.to_json() + " do not match its commit (started " + std::to_string(c.started.size()) + ")", step);
    }
  } else {
    add(out, kInvA, what + " is not a step that commits", step);
    return;
  }
  match_starts(c, expected, &x, trigger, snap, what, out);
  x.last_commit = c.seq;
  for (const CommitRecord::Started& st : c.started) {
    Value t;
    if (kind == "event") {
      t = Value::object({{"type", "event"}, {"name", w["name"]}, {"payload", w["payload"]}, {"time", Value(std::string_view(format_time(c.at)))}});
      start_context(st, c, &x, t, false, Value::empty_object(), false);
    } else if (kind == "start") {
      t = Value::object({{"type", "api"}, {"time", Value(std::string_view(format_time(c.at)))}});
      start_context(st, c, &x, t, false, w["inputs"], false);
    } else {
      Value rec = has_previous ? trigger["record"] : trigger;
      t = Value::object({{"type", "record"}, {"table", Value(c.table)}, {"operation", Value(kind)}, {"sys_id", rec["sys_id"]},
                         {"record", rec}, {"previous", has_previous ? trigger["previous"] : Value()},
                         {"time", Value(std::string_view(format_time(c.at)))}});
      start_context(st, c, &x, t, has_previous, Value::empty_object(), false);
    }
  }
}

void Model::check_tables(const Snapshot& snap, Violations* out) {
  for (const auto& [name, t] : tables_) {
    auto it = snap.records.find(name);
    const std::vector<Value> empty;
    const std::vector<Value>& rows = it == snap.records.end() ? empty : it->second;
    if (rows.size() != t.order.size()) {
      add(out, kInvE, "table " + name + " has " + std::to_string(rows.size()) + " records, the model " + std::to_string(t.order.size()));
      return;
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      const std::string& id = t.order[i];
      if (str(rows[i]["sys_id"]) != id) {
        add(out, kInvE, "table " + name + " record #" + std::to_string(i + 1) + " is " + str(rows[i]["sys_id"]) + ", the model's is " + id +
                            " (insertion order)", rows[i]);
        return;
      }
      if (!(rows[i] == t.rows.at(id))) {
        add(out, kInvE, name + "/" + id + " differs from the model's " + t.rows.at(id).to_json(), rows[i]);
        return;
      }
    }
  }
  for (const auto& [name, rows] : snap.records) {
    if (!tables_.count(name) && !rows.empty()) add(out, kInvE, "table " + name + " has records no write made", rows[0]);
  }
}

}  // namespace flowrt::sim
