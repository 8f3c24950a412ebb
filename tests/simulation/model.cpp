#include "tests/simulation/model.h"

#include <algorithm>
#include <deque>

#include "tests/simulation/sim_json.h"

namespace flowrt::sim {
namespace {

// flow|type|... : what a start is, as a context's trigger or a skipped entry's event names it.
std::string trigger_key(const Value& flow, const Value& t) {
  std::string k = str(flow) + "|" + str(t["type"]);
  if (t["type"].as_string() == "record") {
    k += "|" + str(t["table"]) + "|" + str(t["operation"]) + "|" + str(t["sys_id"]);
  } else if (t["type"].as_string() == "event") {
    k += "|" + str(t["name"]);
  } else if (t["type"].as_string() == "call") {
    k += "|" + str(t["subflow"]);
  }
  return k;
}

std::string run_key(const std::string& flow, const std::string& table, const std::string& sys_id) {
  return flow + "|" + table + "|" + sys_id;
}

// A record update changed a value (engine fields aside; a missing field reads as null).
bool changed(const Value& previous, const Value& record) {
  for (const auto& m : record.members()) {
    const std::string_view k = m.key.as_string();
    if (k == "sys_updated_on" || k == "sys_mod_count") continue;
    if (!(previous[k] == m.value)) return true;
  }
  for (const auto& m : previous.members()) {
    if (!record.contains(m.key.as_string()) && !m.value.is_null()) return true;
  }
  return false;
}

}  // namespace

// ---- Model ----

Model::Model(const Scenario& s) : s_(s) {
  for (const FlowSpec& f : s.flows) active_[f.id] = true;
}

bool Model::active(const std::string& flow) const {
  auto it = active_.find(flow);
  return it != active_.end() && it->second;
}

std::map<std::string, std::vector<std::string>> Model::live_records() const {
  std::map<std::string, std::vector<std::string>> out;
  for (const std::string& t : s_.tables) {
    std::vector<std::string>& ids = out[t];
    auto it = history_.find(t);
    if (it == history_.end()) continue;
    for (const auto& [id, v] : it->second) {
      if (!v.deleted) ids.push_back(id);
    }
  }
  return out;
}

const Value* Model::latest(const std::string& table, const std::string& sys_id) const {
  auto t = history_.find(table);
  if (t == history_.end()) return nullptr;
  auto r = t->second.find(sys_id);
  if (r == t->second.end() || r->second.by_mod_count.empty()) return nullptr;
  return &r->second.by_mod_count.rbegin()->second;
}

void Model::add_version(const std::string& table, const Value& record, const std::string& where, Violations* out) {
  Versions& v = history_[table][str(record["sys_id"])];
  const int64_t mod = record["sys_mod_count"].as_int();
  auto [it, fresh] = v.by_mod_count.emplace(mod, record);
  if (!fresh) {
    add(out, "(e) records = the writes", "two writes made version " + std::to_string(mod) + " of " + table + "/" +
                                             str(record["sys_id"]) + " (a lost update): " + it->second.to_json() +
                                             " and, from " + where + ", " + record.to_json());
  }
  if (v.deleted) add(out, "(e) records = the writes", where + " wrote " + table + "/" + str(record["sys_id"]) + " after it was deleted", record);
}

// A deleted record: `once` forgets it (a record inserted later with its sys_id is new).
void Model::forget_record(const std::string& table, const std::string& sys_id) {
  history_[table][sys_id].deleted = true;
  const std::string suffix = "|" + table + "|" + sys_id;
  for (auto it = once_ran_.begin(); it != once_ran_.end();) {
    it = it->ends_with(suffix) ? once_ran_.erase(it) : std::next(it);
  }
}

void Model::rule_outcome(const FlowSpec& f, const Value* parent, const std::string& table, const std::string& sys_id,
                         Expected* e) {
  e->kind = Expected::Kind::kStart;
  if (parent) {
    if ((*parent)["flow"].as_string() == f.id) {
      e->kind = Expected::Kind::kSkip;
      e->reason = "direct_recursion";
      return;
    }
    int64_t runs = (*parent)["flow"].as_string() == f.id;
    for (const Value& x : (*parent)["chain"].items()) runs += x.as_string() == f.id;
    if (runs >= std::max<int64_t>(1, s_.recursion_limit)) {
      e->kind = Expected::Kind::kSkip;
      e->reason = "indirect_recursion_limit";
      return;
    }
  }
  if (f.kind != FlowSpec::Kind::kRecord || (f.when != "updated" && f.when != "created_or_updated")) return;
  const std::string rk = run_key(f.id, table, sys_id);
  if (f.run == "once") {
    if (parent) {
      e->kind = Expected::Kind::kEither;
      e->reason = "run_once";
    } else if (once_ran_.count(rk)) {
      e->kind = Expected::Kind::kSkip;
      e->reason = "run_once";
    }
  } else if (f.run.empty() || f.run == "always") {
    if (parent) {
      e->kind = Expected::Kind::kEither;
      e->reason = "already_running";
    } else {
      for (const std::string& id : unfinished_) {
        auto it = ctx_run_.find(id);
        if (it != ctx_run_.end() && it->second == rk) {
          e->kind = Expected::Kind::kSkip;
          e->reason = "already_running";
          e->why += " (" + id + " is still running for the record)";
          return;
        }
      }
    }
  }
}

void Model::record_starts(const std::string& table, const std::string& op, const Value& record, const Value& previous,
                          const Value* parent, TimeMs at, std::vector<Expected>* out) {
  const std::string sys_id = str(record["sys_id"]);
  const bool is_change = op != "update" || changed(previous, record);
  for (const FlowSpec& f : s_.flows) {
    if (f.kind != FlowSpec::Kind::kRecord || f.table != table || !active(f.id)) continue;
    const bool listens = (op == "insert" && (f.when == "created" || f.when == "created_or_updated")) ||
                         (op == "update" && (f.when == "updated" || f.when == "created_or_updated")) ||
                         (op == "delete" && f.when == "deleted");
    if (!listens) continue;
    if (!is_change && f.run != "for_every_update") continue;
    if (f.condition && !model_condition_holds(*f.condition, record)) continue;
    Expected e;
    e.key = f.id + "|record|" + table + "|" + op + "|" + sys_id;
    e.at = at;
    e.why = op + " of " + table + "/" + sys_id + " matches " + f.id;
    rule_outcome(f, parent, table, sys_id, &e);
    out->push_back(std::move(e));
  }
}

void Model::event_starts(const std::string& name, const Value* parent, TimeMs at, std::vector<Expected>* out) {
  for (const FlowSpec& f : s_.flows) {
    if (f.kind != FlowSpec::Kind::kEvent || f.event != name || !active(f.id)) continue;
    Expected e;
    e.key = f.id + "|event|" + name;
    e.at = at;
    e.why = "event " + name + " matches " + f.id;
    rule_outcome(f, parent, "", "", &e);
    out->push_back(std::move(e));
  }
}

void Model::match(const std::vector<Expected>& expected, const std::vector<Value>& contexts,
                  const std::vector<Value>& skipped, const std::string& what, const Value* parent, Violations* out) {
  const std::string inv = "(a) every trigger match started a context or was skipped";
  std::map<std::string, std::deque<const Value*>> ctx_pool, skip_pool;
  Value want_chain;
  if (parent) {
    std::vector<Value> chain;
    for (const Value& x : (*parent)["chain"].items()) chain.push_back(x);
    chain.push_back((*parent)["flow"]);
    want_chain = Value::array(std::move(chain));
  } else {
    want_chain = Value::empty_array();
  }
  for (const Value& c : contexts) {
    ctx_pool[trigger_key(c["flow"], c["trigger"])].push_back(&c);
    const Value& cause = c["cause"];
    if (parent ? !(cause["context"] == (*parent)["id"] && cause["flow"] == (*parent)["flow"]) : !cause.is_null()) {
      add(out, inv, str(c["id"]) + " (started by " + what + ") names the wrong cause", c);
    }
    if (!(c["chain"] == want_chain)) add(out, inv, str(c["id"]) + " has chain " + c["chain"].to_json() + ", want " + want_chain.to_json(), c);
  }
  for (const Value& k : skipped) skip_pool[trigger_key(k["flow"], k["event"])].push_back(&k);

  std::set<std::string> ambiguous;
  for (const Expected& e : expected) {
    if (e.kind == Expected::Kind::kEither) ambiguous.insert(e.key);
  }
  int64_t last_seq = 0;
  auto take_context = [&](const Expected& e) -> const Value* {
    auto& pool = ctx_pool[e.key];
    if (pool.empty()) return nullptr;
    auto it = pool.begin();
    if (!e.context.empty()) {
      it = std::find_if(pool.begin(), pool.end(), [&](const Value* c) { return (*c)["id"].as_string() == e.context; });
      if (it == pool.end()) return nullptr;
    }
    const Value* c = *it;
    pool.erase(it);
    const TimeMs started = ms((*c)["started_at"]);
    if (started >= 0 && started < e.at) {
      add(out, "(d) seq / FIFO order", str((*c)["id"]) + " started at " + str((*c)["started_at"]) +
                                           ", before the operation that started it committed (" + format_time(e.at) + ")", *c);
    }
    return c;
  };
  for (const Expected& e : expected) {
    if (e.kind == Expected::Kind::kStart) {
      const Value* c = take_context(e);
      if (!c) {
        add(out, inv, what + ": " + e.why + ", but no context started for it" +
                          (skip_pool[e.key].empty() ? "" : " (it was skipped: " + skip_pool[e.key].front()->to_json() + ")"),
            parent ? *parent : Value());
        continue;
      }
      if (!ambiguous.count(e.key)) {
        const int64_t seq = (*c)["seq"].as_int();
        if (seq <= last_seq) {
          add(out, "(d) seq / FIFO order", str((*c)["id"]) + " (" + e.why + ") has a seq below that of a start caused before it by " + what, *c);
        }
        last_seq = std::max(last_seq, seq);
      }
    } else if (e.kind == Expected::Kind::kSkip) {
      auto& pool = skip_pool[e.key];
      if (pool.empty()) {
        add(out, inv, what + ": " + e.why + " must be skipped (" + e.reason + "), but is not in the skipped list" +
                          (ctx_pool[e.key].empty() ? "" : " (a context started: " + str((*ctx_pool[e.key].front())["id"]) + ")"),
            ctx_pool[e.key].empty() ? (parent ? *parent : Value()) : *ctx_pool[e.key].front());
        continue;
      }
      const Value* k = pool.front();
      pool.pop_front();
      if ((*k)["reason"].as_string() != e.reason) {
        add(out, inv, what + ": " + e.why + " skipped with reason " + str((*k)["reason"]) + ", want " + e.reason, *k);
      }
    }
  }
  for (const Expected& e : expected) {
    if (e.kind != Expected::Kind::kEither) continue;
    if (take_context(e)) continue;
    auto& pool = skip_pool[e.key];
    if (pool.empty()) {
      add(out, inv, what + ": " + e.why + ", but it neither started a context nor was skipped", parent ? *parent : Value());
      continue;
    }
    const Value* k = pool.front();
    pool.pop_front();
    if ((*k)["reason"].as_string() != e.reason) {
      add(out, inv, what + ": " + e.why + " skipped with reason " + str((*k)["reason"]) + ", want " + e.reason, *k);
    }
  }
  for (const auto& [key, pool] : ctx_pool) {
    for (const Value* c : pool) add(out, inv, str((*c)["id"]) + " started, but " + what + " matches no trigger for it (" + key + ")", *c);
  }
  for (const auto& [key, pool] : skip_pool) {
    for (const Value* k : pool) add(out, inv, "a skipped start that " + what + " does not explain (" + key + ")", *k);
  }
}

void Model::note_started(const Value& c) {
  const std::string id = str(c["id"]);
  max_seq_ = std::max<uint64_t>(max_seq_, static_cast<uint64_t>(c["seq"].as_int()));
  if (!terminal(c)) unfinished_.insert(id);
  const Value& t = c["trigger"];
  if (t["type"].as_string() == "record") {
    const std::string rk = run_key(str(c["flow"]), str(t["table"]), str(t["sys_id"]));
    ctx_run_[id] = rk;
    const FlowSpec* f = s_.flow(str(c["flow"]));
    if (f && f->run == "once") once_ran_.insert(rk);
  }
}

void Model::external_write(const std::string& table, const std::string& op, const Value& record, const Value& previous,
                           const std::vector<Value>& new_contexts, const std::vector<Value>& new_skipped, TimeMs now,
                           Violations* out) {
  const std::string sys_id = str(record["sys_id"]);
  const std::string what = "outside " + op + " of " + table + "/" + sys_id;
  if (op == "delete") {
    const Value* last = latest(table, sys_id);
    if (!last || !(*last == record)) {
      add(out, "(e) records = the writes", what + " removed a record that is not the last version written: " +
                                               (last ? last->to_json() : std::string("(none)")), record);
    }
    forget_record(table, sys_id);
  } else {
    add_version(table, record, what, out);
  }
  std::vector<Expected> expected;
  record_starts(table, op, record, previous, nullptr, now, &expected);
  match(expected, new_contexts, new_skipped, what, nullptr, out);
  for (const Value& c : new_contexts) {
    note_started(c);
    committed_at_[str(c["id"])] = now;
  }
  skipped_seen_ += new_skipped.size();
}

void Model::external_event(const std::string& name, const std::vector<Value>& new_contexts,
                           const std::vector<Value>& new_skipped, TimeMs now, Violations* out) {
  std::vector<Expected> expected;
  event_starts(name, nullptr, now, &expected);
  match(expected, new_contexts, new_skipped, "outside fire_event " + name, nullptr, out);
  for (const Value& c : new_contexts) note_started(c);
  skipped_seen_ += new_skipped.size();
}

void Model::external_call(const std::string& flow, const std::optional<std::string>& started,
                          const std::vector<Value>& new_contexts, const std::vector<Value>& new_skipped, TimeMs now,
                          Violations* out) {
  const FlowSpec* f = s_.flow(flow);
  const bool startable = f && f->kind == FlowSpec::Kind::kApi && active(flow);
  std::vector<Expected> expected;
  if (startable != started.has_value()) {
    add(out, "(a) every trigger match started a context or was skipped",
        "call_flow " + flow + (startable ? " (an active API flow) failed" : " (not an active API flow) started " + *started));
  }
  if (started) {
    Expected e;
    e.key = flow + "|api";
    e.context = *started;
    e.at = now;
    e.why = "call_flow " + flow;
    expected.push_back(e);
  }
  match(expected, new_contexts, new_skipped, "outside call_flow " + flow, nullptr, out);
  for (const Value& c : new_contexts) note_started(c);
  skipped_seen_ += new_skipped.size();
}

void Model::external_nothing(const std::string& what, const std::vector<Value>& new_contexts,
                             const std::vector<Value>& new_skipped, Violations* out) {
  match({}, new_contexts, new_skipped, what, nullptr, out);
  for (const Value& c : new_contexts) note_started(c);
  skipped_seen_ += new_skipped.size();
}

void Model::after_run(const Snapshot& s, Violations* out) {
  // Pass 1: every record version the new steps wrote (an update's previous version may
  // come from a step of another context that ran in the same settle).
  struct NewSteps {
    const Value* ctx;
    size_t from;
  };
  std::vector<NewSteps> fresh;
  for (const Value& c : s.contexts) {
    const size_t from = steps_seen_[str(c["id"])];
    if (c["steps"].size() > from) fresh.push_back(NewSteps{&c, from});
  }
  for (const NewSteps& n : fresh) {
    const std::string id = str((*n.ctx)["id"]);
    for (size_t i = n.from; i < (*n.ctx)["steps"].size(); ++i) {
      const Value& st = (*n.ctx)["steps"].at(i);
      if (st["status"].as_string() != "completed") continue;
      const std::string_view action = st["action"].as_string();
      const std::string where = id + " step " + str(st["path"]) + " (" + std::string(action) + ")";
      if (action == "create_record" || action == "update_record") {
        add_version(str(st["inputs"]["table"]), st["outputs"]["record"], where, out);
      }
    }
  }
  for (const NewSteps& n : fresh) {
    for (size_t i = n.from; i < (*n.ctx)["steps"].size(); ++i) {
      const Value& st = (*n.ctx)["steps"].at(i);
      if (st["action"].as_string() == "delete_record" && st["status"].as_string() == "completed") {
        const std::string table = str(st["inputs"]["table"]), sys_id = str(st["inputs"]["sys_id"]);
        forget_record(table, sys_id);
      }
    }
  }

  // Pass 2: the starts each context's new steps imply, against the contexts and skipped
  // entries that name it as their cause.
  std::map<std::string, std::vector<Value>> children, skips;
  for (const Value& c : s.contexts) {
    if (static_cast<uint64_t>(c["seq"].as_int()) <= max_seq_) continue;
    const Value& cause = c["cause"];
    if (cause.is_null()) {
      add(out, "(a) every trigger match started a context or was skipped",
          str(c["id"]) + " started during settle/advance with no cause (nothing from outside runs then)", c);
      continue;
    }
    children[str(cause["context"])].push_back(c);
  }
  for (size_t i = skipped_seen_; i < s.skipped.size(); ++i) {
    const Value& k = s.skipped[i];
    if (k["cause"].is_null()) {
      add(out, "(a) every trigger match started a context or was skipped", "a skipped start with no cause during settle/advance", k);
      continue;
    }
    skips[str(k["cause"]["context"])].push_back(k);
  }
  std::set<std::string> parents_done;
  for (const NewSteps& n : fresh) {
    const Value& p = *n.ctx;
    const std::string id = str(p["id"]);
    std::vector<Expected> expected;
    for (size_t i = n.from; i < p["steps"].size(); ++i) {
      const Value& st = p["steps"].at(i);
      const std::string_view action = st["action"].as_string();
      const std::string_view status = st["status"].as_string();
      const Value& in = st["inputs"];
      const TimeMs at = ms(st["started_at"]);
      if (status == "completed" && (action == "create_record" || action == "update_record")) {
        const Value& rec = st["outputs"]["record"];
        const std::string table = str(in["table"]);
        Value previous;
        if (action == "update_record") {
          auto t = history_.find(table);
          const Versions* v = nullptr;
          if (t != history_.end()) {
            auto r = t->second.find(str(rec["sys_id"]));
            if (r != t->second.end()) v = &r->second;
          }
          const int64_t mod = rec["sys_mod_count"].as_int();
          if (!v || !v->by_mod_count.count(mod - 1)) {
            add(out, "(e) records = the writes", id + " step " + str(st["path"]) + " wrote version " + std::to_string(mod) +
                                                     " of " + table + "/" + str(rec["sys_id"]) + ", but no write made version " +
                                                     std::to_string(mod - 1), p);
            continue;
          }
          previous = v->by_mod_count.at(mod - 1);
        }
        record_starts(table, action == "create_record" ? "insert" : "update", rec, previous, &p, at, &expected);
      } else if (status == "completed" && action == "delete_record") {
        const std::string table = str(in["table"]), sys_id = str(in["sys_id"]);
        const Value* last = latest(table, sys_id);
        if (!last) {
          add(out, "(e) records = the writes", id + " deleted " + table + "/" + sys_id + ", which no write created", p);
          continue;
        }
        record_starts(table, "delete", *last, Value(), &p, at, &expected);
      } else if (status == "completed" && action == "fire_event") {
        event_starts(str(in["name"]), &p, at, &expected);
      } else if (action == "start_flow") {
        const std::string flow = str(in["flow"]);
        const FlowSpec* f = s_.flow(flow);
        const bool startable = f && f->kind == FlowSpec::Kind::kApi && active(flow);
        if ((status == "completed") != startable) {
          add(out, "(a) every trigger match started a context or was skipped",
              id + " step " + str(st["path"]) + ": start_flow " + flow + " ended " + std::string(status) +
                  (startable ? " although the flow is an active API flow" : " although the flow is not an active API flow"), p);
        }
        if (status == "completed" && f) {
          Expected e;
          e.key = flow + "|api";
          e.at = at;
          e.why = "start_flow " + flow + " at " + str(st["path"]);
          rule_outcome(*f, &p, "", "", &e);
          const Value& o = st["outputs"];
          if (e.kind == Expected::Kind::kStart) {
            e.context = str(o["context_id"]);
            if (!o["context_id"].is_string() || o["skipped"].as_bool()) {
              add(out, "(a) every trigger match started a context or was skipped", e.why + " should start a context; outputs " + o.to_json(), p);
            }
          } else if (o["skipped"].as_bool() != true || !o["context_id"].is_null()) {
            add(out, "(a) every trigger match started a context or was skipped", e.why + " should be skipped (" + e.reason + "); outputs " + o.to_json(), p);
          }
          expected.push_back(e);
        }
      } else if (action == "call_subflow" && status == "skipped") {
        Expected e;
        e.key = str(in["subflow"]) + "|call|" + str(in["subflow"]);
        e.kind = Expected::Kind::kSkip;
        e.reason = "direct_recursion";
        e.at = at;
        e.why = "call_subflow " + str(in["subflow"]) + " inside itself at " + str(st["path"]);
        expected.push_back(e);
      }
    }
    parents_done.insert(id);
    match(expected, children[id], skips[id], id + "'s steps", &p, out);
  }
  for (const auto& [parent, list] : children) {
    if (parents_done.count(parent)) continue;
    const Value* p = s.context(parent);
    for (const Value& c : list) {
      add(out, "(a) every trigger match started a context or was skipped",
          str(c["id"]) + " names " + parent + " as its cause, but no new step of " + parent + " ran", p ? *p : c);
    }
  }
  for (const auto& [parent, list] : skips) {
    if (parents_done.count(parent)) continue;
    for (const Value& k : list) add(out, "(a) every trigger match started a context or was skipped", "a skipped start caused by " + parent + ", which ran no new step", k);
  }

  // What has now been seen.
  for (const NewSteps& n : fresh) steps_seen_[str((*n.ctx)["id"])] = (*n.ctx)["steps"].size();
  for (const Value& c : s.contexts) {
    if (static_cast<uint64_t>(c["seq"].as_int()) > max_seq_) note_started(c);
  }
  for (const Value& c : s.contexts) {
    if (static_cast<uint64_t>(c["seq"].as_int()) > max_seq_) max_seq_ = static_cast<uint64_t>(c["seq"].as_int());
  }
  skipped_seen_ = s.skipped.size();
  unfinished_.clear();
  for (const Value& c : s.contexts) {
    if (!terminal(c)) unfinished_.insert(str(c["id"]));
    auto it = committed_at_.find(str(c["id"]));
    if (it != committed_at_.end() && ms(c["started_at"]) >= 0 && ms(c["started_at"]) < it->second) {
      add(out, "(d) seq / FIFO order", str(c["id"]) + " started before the outside operation that started it", c);
    }
  }
  check_records(s, out);
  check_run_options(s, out);
}

void Model::check_records(const Snapshot& s, Violations* out) {
  const std::string inv = "(e) records = the writes";
  for (const auto& [table, rows] : history_) {
    for (const auto& [sys_id, v] : rows) {
      const Value* r = s.record(table, sys_id);
      if (v.deleted) {
        if (r) add(out, inv, table + "/" + sys_id + " was deleted but is still in the table", *r);
        continue;
      }
      if (!r) {
        add(out, inv, table + "/" + sys_id + " was written and never deleted, but is not in the table",
            v.by_mod_count.rbegin()->second);
        continue;
      }
      const Value& last = v.by_mod_count.rbegin()->second;
      if (!(last == *r)) add(out, inv, table + "/" + sys_id + " differs from the last version written: " + last.to_json(), *r);
      const int64_t mod = (*r)["sys_mod_count"].as_int();
      if (static_cast<int64_t>(v.by_mod_count.size()) != mod + 1) {
        add(out, inv, table + "/" + sys_id + " is at sys_mod_count " + std::to_string(mod) + " but " +
                          std::to_string(v.by_mod_count.size()) + " writes made it", *r);
      }
    }
  }
  for (const auto& [table, rows] : s.records) {
    for (const Value& r : rows) {
      auto t = history_.find(table);
      if (t == history_.end() || !t->second.count(str(r["sys_id"]))) {
        add(out, inv, table + "/" + str(r["sys_id"]) + " is in the table, but no write made it", r);
      }
    }
  }
}

void Model::check_run_options(const Snapshot& s, Violations* out) {
  const std::string inv = "(a) run options";
  std::map<std::string, std::vector<const Value*>> by_run;
  for (const Value& c : s.contexts) {
    const Value& t = c["trigger"];
    if (t["type"].as_string() != "record") continue;
    by_run[run_key(str(c["flow"]), str(t["table"]), str(t["sys_id"]))].push_back(&c);
  }
  for (const FlowSpec& f : s_.flows) {
    if (f.kind != FlowSpec::Kind::kRecord || (f.when != "updated" && f.when != "created_or_updated")) continue;
    const bool once = f.run == "once", always = f.run.empty() || f.run == "always";
    if (!once && !always) continue;
    for (const auto& [rk, list] : by_run) {
      if (rk.rfind(f.id + "|", 0) != 0) continue;
      if (once && list.size() > 1) {
        add(out, inv, f.id + " runs once per record, but " + str((*list[1])["id"]) + " ran after " + str((*list[0])["id"]) + " for " + rk, *list[1]);
      }
      if (!always) continue;
      for (size_t i = 1; i < list.size(); ++i) {
        const Value& a = *list[i - 1];
        const Value& b = *list[i];
        const TimeMs b_started = ms(b["started_at"]);
        if (!terminal(a) || (b_started >= 0 && ms(a["ended_at"]) > b_started)) {
          add(out, inv, f.id + " (run: always) started " + str(b["id"]) + " for " + rk + " while " + str(a["id"]) +
                            " was still running for it", b);
        }
      }
    }
  }
  for (size_t i = 0; i < s.skipped.size(); ++i) {
    const Value& k = s.skipped[i];
    const std::string_view reason = k["reason"].as_string();
    if (reason != "run_once" && reason != "already_running") continue;
    const Value& t = k["event"];
    if (!by_run.count(run_key(str(k["flow"]), str(t["table"]), str(t["sys_id"])))) {
      add(out, inv, "a start skipped as " + std::string(reason) + " although no context of the flow ever ran for the record", k);
    }
  }
}

}  // namespace flowrt::sim
