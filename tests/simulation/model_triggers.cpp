// Model, the trigger half: the starts and skips a commit implies (which flows a record
// write, an event or a schedule tick starts, and the rules that skip them: run options,
// recursion limits, max_queued_events), checked against what the engine did.
#include <algorithm>

#include "runtime/record_json.h"
#include "tests/simulation/model.h"
#include "tests/simulation/model_rules.h"
#include "tests/simulation/sim_json.h"
#include "triggers/schedule.h"

namespace flowrt::sim {

using namespace model_rules;  // NOLINT: the commit half's own helpers

// ---- triggers and rules ----

void Model::record_starts(const CommitRecord& c, const std::string& op, const Value& record, const Value& previous,
                          const Ctx* parent, const CommitLog& log, std::vector<Expect>* out) {
  // On one thread a step prepares and commits its write at once; on real threads the
  // write may have looked at the active flows any time after its context's last commit.
  const uint64_t since = parent && threads_ ? parent->last_commit : 0;
  bool changed = true;
  if (op == "update") {
    bool ch = false;
    (void)updated(previous, record.without("sys_updated_on").without("sys_mod_count").without("sys_created_on"), 0, &ch);
    changed = ch;
  }
  const std::vector<DriverState> states = states_at(c.seq, since);
  for (const FlowSpec& f : s_.flows) {
    if (f.kind != FlowSpec::Kind::kRecord || f.table != c.table) continue;
    const bool listens = (op == "insert" && (f.when == "created" || f.when == "created_or_updated")) ||
                         (op == "update" && (f.when == "updated" || f.when == "created_or_updated")) ||
                         (op == "delete" && f.when == "deleted");
    if (!listens) continue;
    if (!changed && f.run != "for_every_update") continue;
    if (f.condition && !model_condition_holds(*f.condition, record, op == "update" ? &previous : nullptr)) continue;
    size_t active = 0;
    for (const DriverState& st : states) active += st.active.at(f.id);
    if (active == 0) continue;
    Expect e{f.id, true, {}, op + " of " + c.table + "/" + str(record["sys_id"]) + " matches " + f.id};
    rules(c, f, parent, c.table, str(record["sys_id"]), log, &e);
    if (active < states.size()) e.reasons.push_back("inactive");  // activated or deactivated meanwhile
    out->push_back(std::move(e));
  }
}

void Model::event_starts(const CommitRecord& c, const std::string& name, const Ctx* parent, const CommitLog& log,
                         std::vector<Expect>* out) {
  const std::vector<DriverState> states = states_at(c.seq, parent && threads_ ? parent->last_commit : 0);
  for (const FlowSpec& f : s_.flows) {
    if (f.kind != FlowSpec::Kind::kEvent || f.event != name) continue;
    size_t active = 0;
    for (const DriverState& st : states) active += st.active.at(f.id);
    if (active == 0) continue;
    Expect e{f.id, true, {}, "event " + name + " matches " + f.id};
    rules(c, f, parent, "", "", log, &e);
    if (active < states.size()) e.reasons.push_back("inactive");
    out->push_back(std::move(e));
  }
}

void Model::rules(const CommitRecord& c, const FlowSpec& f, const Ctx* parent, const std::string& table,
                  const std::string& sys_id, const CommitLog& log, Expect* e) {
  if (parent) {
    if (parent->flow == f.id) {
      e->start = false;
      e->reasons = {"direct_recursion"};
      return;
    }
    // The new context's chain is the parent's plus the parent's flow (not f, or it would
    // be direct recursion): f's runs are those in the parent's chain.
    const int64_t runs = std::count(parent->chain.begin(), parent->chain.end(), f.id);
    std::set<bool> outcomes;
    for (const DriverState& st : states_at(c.seq, 0)) outcomes.insert(runs >= std::max<int64_t>(1, st.recursion_limit));
    if (outcomes.count(true)) {
      if (outcomes.size() == 1) e->start = false;
      e->reasons = {"indirect_recursion_limit"};
      if (outcomes.size() == 1) return;
      e->reasons.push_back("start");  // either: the limit changed during this commit's operation
      return;
    }
  }
  if (f.kind != FlowSpec::Kind::kRecord || (f.when != "updated" && f.when != "created_or_updated")) return;
  const std::string rk = run_key(f.id, table, sys_id);
  if (f.run == "once") {
    if (once_ran_.count(rk)) {
      e->start = false;
      e->reasons = {"run_once"};
    }
  } else if (f.run.empty() || f.run == "always") {
    std::vector<std::string>& list = running_[rk];
    bool ambiguous = false;
    for (auto it = list.begin(); it != list.end();) {
      const CommitLog::Ends ends = log.ends(*it);
      if (ends.ended_by <= c.seq) {
        it = list.erase(it);
        continue;
      }
      if (ends.alive_through >= c.seq) {
        e->start = false;
        e->reasons = {"already_running"};
        e->why += " (" + *it + " still runs for the record)";
        return;
      }
      ambiguous = true;
      ++it;
    }
    if (ambiguous) {
      e->reasons = {"already_running", "start"};
      count("run options undecided (a context ending at the commit)");
    }
  }
}

void Model::start_context(const CommitRecord::Started& st, const CommitRecord& c, const Ctx* parent, const Value& trigger,
                          bool has_previous, const Value& inputs, bool test) {
  Ctx x;
  x.id = st.id;
  x.flow = st.flow;
  x.seq = st.seq;
  x.start_commit = c.seq;
  x.last_commit = c.seq;
  x.test = test;
  if (parent) {
    x.chain = parent->chain;
    x.chain.push_back(parent->flow);
  }
  x.trigger = trigger;
  x.has_previous = has_previous;
  x.inputs = inputs.is_object() ? inputs : Value::empty_object();
  Frame root;
  root.unit = st.flow;
  root.inputs = x.inputs;
  root.stack = {st.flow};
  x.frames[""] = root;
  const FlowSpec* f = s_.flow(st.flow);
  if (!test && f && f->kind == FlowSpec::Kind::kRecord && (f->when == "updated" || f->when == "created_or_updated")) {
    const std::string rk = run_key(f->id, str(trigger["table"]), str(trigger["sys_id"]));
    if (f->run == "once") once_ran_.insert(rk);
    if (f->run.empty() || f->run == "always") running_[rk].push_back(st.id);
  }
  ctx_order_.push_back(st.id);
  ctxs_[st.id] = std::move(x);
}

void Model::match_starts(const CommitRecord& c, const std::vector<Expect>& expected, const Ctx* parent,
                         const Value& trigger, const Snapshot& snap, const std::string& what, Violations* out) {
  (void)trigger;
  // Seq numbers follow commit order, one after another; each context names this commit.
  for (const CommitRecord::Started& st : c.started) {
    if (st.seq != next_seq_ || st.commit_seq != c.seq || st.id != "ctx-" + std::to_string(st.seq)) {
      add(out, kInvD, what + " started " + st.id + " (seq " + std::to_string(st.seq) + ", commit " + std::to_string(st.commit_seq) +
                          ") but the next seq is " + std::to_string(next_seq_) + " and the commit is " + std::to_string(c.seq));
    }
    next_seq_ = st.seq + 1;
  }
  // Skipped entries of this commit: the next ones of the engine's list (subflow calls aside).
  std::vector<const Value*> skips;
  {
    size_t seen = 0;
    for (const Value& k : snap.skipped) {
      if (k["event"]["type"].as_string() == "call") continue;
      if (seen++ < skipped_seen_) continue;
      skips.push_back(&k);
    }
  }
  std::vector<bool> used_start(c.started.size(), false);
  size_t skip_i = 0;
  for (const Expect& e : expected) {
    const bool may_start = e.start || std::count(e.reasons.begin(), e.reasons.end(), "start");
    const bool may_vanish = std::count(e.reasons.begin(), e.reasons.end(), "inactive") > 0;
    // Started?
    bool found = false;
    for (size_t i = 0; i < c.started.size() && !found; ++i) {
      if (!used_start[i] && c.started[i].flow == e.flow) {
        used_start[i] = found = true;
        if (!may_start) add(out, kInvA, what + ": " + e.why + " should be skipped (" + e.reasons.front() + "), but " + c.started[i].id + " started");
      }
    }
    if (found) continue;
    // Skipped? The list may already hold entries of later commits: a start that may have
    // vanished (its flow inactive) must not take an entry another commit made — another
    // context's (its cause), or, of a record operation, one of another record or operation
    // (its event: seed 26111 of the threads variant, where an insert while the flow was
    // inactive took the skip of a later update of another record). A later skip of the same
    // operation on the same record, by the same cause, is still taken: the entries carry
    // no commit number to tell the two apart.
    const auto ours = [&](const Value& k) {
      if (!(parent ? k["cause"]["context"] == Value(parent->id) : k["cause"].is_null())) return false;
      if (c.kind != CommitEntry::Kind::kInsert && c.kind != CommitEntry::Kind::kUpdate &&
          c.kind != CommitEntry::Kind::kDelete) {
        return true;
      }
      const Value& event = k["event"];
      return str(event["type"]) == "record" && str(event["table"]) == c.table &&
             str(event["operation"]) == kind_name(c.kind) && event["sys_id"] == c.record["sys_id"];
    };
    if (skip_i < skips.size() && (*skips[skip_i])["flow"].as_string() == e.flow &&
        (!may_vanish || ours(*skips[skip_i]))) {
      const Value& k = *skips[skip_i++];
      const std::string reason = str(k["reason"]);
      if (std::find(e.reasons.begin(), e.reasons.end(), reason) == e.reasons.end()) {
        add(out, kInvA, what + ": " + e.why + " was skipped as " + reason + (e.reasons.empty() ? ", but should start" : ", want " + e.reasons.front()), k);
      }
      const Value& cause = k["cause"];
      if (parent ? !(cause["context"] == Value(parent->id)) : !cause.is_null()) add(out, kInvA, what + ": a skipped entry names the wrong cause", k);
      count("skipped " + reason);
      continue;
    }
    if (!may_vanish) add(out, kInvA, what + ": " + e.why + ", but no context started for it and it was not skipped");
  }
  skipped_seen_ += skip_i;
  for (size_t i = 0; i < c.started.size(); ++i) {
    if (!used_start[i]) add(out, kInvA, what + " started " + c.started[i].id + " (" + c.started[i].flow + "), which no trigger explains");
  }
  // The started contexts' records: flow, cause and chain.
  Value want_chain = Value::empty_array();
  if (parent) {
    std::vector<Value> chain;
    for (const std::string& v : parent->chain) chain.push_back(Value(v));
    chain.push_back(Value(parent->flow));
    want_chain = Value::array(std::move(chain));
  }
  for (const CommitRecord::Started& st : c.started) {
    const Value* r = snap.context(st.id);
    if (!r) {
      add(out, kInvA, st.id + " was committed but is not in the engine's contexts");
      continue;
    }
    const Value& cause = (*r)["cause"];
    if (parent ? !(cause["context"] == Value(parent->id) && cause["flow"] == Value(parent->flow)) : !cause.is_null()) {
      add(out, kInvA, st.id + " (started by " + what + ") names the wrong cause", *r);
    }
    if (!((*r)["chain"] == want_chain)) add(out, kInvA, st.id + " has chain " + (*r)["chain"].to_json() + ", want " + want_chain.to_json(), *r);
    if ((*r)["flow"].as_string() != st.flow) add(out, kInvA, st.id + " runs flow " + str((*r)["flow"]) + ", committed as " + st.flow, *r);
  }
}

}  // namespace flowrt::sim
