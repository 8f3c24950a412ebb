#include "tests/store/crash/crash_invariants.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace flowrt::crash {
namespace {

// The fields the operations write; a stored op-table record is compared on these.
const std::vector<std::string>& op_fields() {
  static const std::vector<std::string> f{"sys_id", "op", "v", "last_op", "res", "approval"};
  return f;
}

Value project(const Value& record) {
  std::vector<Member> m;
  for (const std::string& f : op_fields()) {
    if (!record[f].is_null()) m.push_back(Member{Value(f), record[f]});
  }
  return Value::object(std::move(m));
}

// The op tables as stored, projected on the op fields.
OpTables stored_op_tables(const StoredState& s) {
  OpTables t;
  t["item"];
  t["request"];
  for (const StoredState::Table& table : s.tables) {
    if (table.name != "item" && table.name != "request") continue;
    for (const Value& r : table.records) t[table.name][std::string(r["sys_id"].as_string())] = project(r);
  }
  return t;
}

std::string describe(const OpTables& t) {
  std::string out;
  for (const auto& [name, rows] : t) {
    out += name + ": {";
    for (const auto& [id, r] : rows) out += " " + r.to_json();
    out += " } ";
  }
  return out;
}

// Where two op-table states differ, in a line.
std::string first_difference(const OpTables& want, const OpTables& got) {
  for (const auto& [name, rows] : want) {
    const auto& g = got.at(name);
    for (const auto& [id, r] : rows) {
      auto it = g.find(id);
      if (it == g.end()) return name + " " + id + " is missing (want " + r.to_json() + ")";
      if (!(it->second == r)) return name + " " + id + " is " + it->second.to_json() + ", want " + r.to_json();
    }
    for (const auto& [id, r] : g) {
      if (!rows.count(id)) return name + " " + id + " should not be there: " + r.to_json();
    }
  }
  return "";
}


std::vector<Value> records_of(const StoredState& s, const std::string& name) {
  for (const StoredState::Table& t : s.tables) {
    if (t.name == name) return t.records;
  }
  return {};
}

std::string op_of_payload(const Value& trigger) {
  const Value& op = trigger["payload"]["op"];
  return op.is_int() ? std::to_string(op.as_int()) : op.to_json();
}

std::set<std::string> side_lines(const std::string& file) {
  std::set<std::string> lines;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) lines.insert(line);
  return lines;
}

// A record without its sys_id (generated ones differ between runs) and its fencing token
// (a crash may use up a token, so later ones are larger; the grant order is compared
// apart), as JSON.
std::string without_sys_id(const Value& r) {
  std::vector<Member> m;
  for (const Member& f : members_of(r)) {
    if (f.key.as_string() != "sys_id" && f.key.as_string() != "token") m.push_back(f);
  }
  return Value::object(std::move(m)).to_json();
}

// Per lock, the requests in the order their grants' tokens say.
std::map<std::string, std::vector<std::string>> grant_order(const StoredState& s) {
  std::map<std::string, Value> res_of;
  for (const Value& r : records_of(s, "request")) res_of[std::string(r["sys_id"].as_string())] = r["res"];
  std::map<std::string, std::map<int64_t, std::string>> by_token;
  for (const Value& g : records_of(s, "grant")) {
    const std::string request(g["request"].as_string());
    by_token["res-" + res_of[request].to_json()][g["token"].as_int()] = request;
  }
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [lock, grants] : by_token) {
    for (const auto& [token, request] : grants) out[lock].push_back(request);
  }
  return out;
}

}  // namespace

Result<StoredState> load_with_history(Store& store) {
  Result<StoredState> state = store.load();
  if (!state.is_ok()) return state;
  ContextQuery q;
  q.ended_only = true;
  while (true) {
    Result<std::vector<StoredContext>> page = store.list_contexts(q);
    if (!page.is_ok()) return page.error();
    if (page->empty()) break;
    q.after_seq = page->back().seq;
    for (StoredContext& c : *page) {
      const bool known = std::any_of(state->contexts.begin(), state->contexts.end(),
                                     [&](const StoredContext& k) { return k.seq == c.seq; });
      if (!known) state->contexts.push_back(std::move(c));
    }
  }
  std::sort(state->contexts.begin(), state->contexts.end(),
            [](const StoredContext& a, const StoredContext& b) { return a.seq < b.seq; });
  return state;
}

std::string context_key(const StoredContext& c) {
  const Value& t = c.trigger;
  const std::string_view type = t["type"].as_string();
  if (type == "record") return c.flow + " " + std::string(t["sys_id"].as_string());
  if (type == "event" || type == "api") return c.flow + " op " + op_of_payload(t);
  if (type == "schedule") return c.flow + " at " + std::to_string(t["time"].as_int());
  return c.flow + " " + t.to_json();
}

void CrashChecker::check_common(const StoredState& s, const Acks& acks, bool final, std::vector<std::string>& out) {
  auto fail = [&out](const std::string& what) { out.push_back(what); };
  std::map<std::string, const StoredContext*> by_id;
  std::map<std::string, std::vector<const StoredContext*>> by_key;
  for (const StoredContext& c : s.contexts) {
    by_id[c.id] = &c;
    by_key[context_key(c)].push_back(&c);
  }

  // 1. Every acknowledged op is there, and the op tables are what ops 1..last (or, after a
  // kill, 1..last+1: its ack may not have been printed) leave.
  const OpTables got = stored_op_tables(s);
  const OpTables want = model_after(ops_, acks.last);
  const std::string diff = first_difference(want, got);
  if (!diff.empty()) {
    const bool next_done = !final && acks.last < static_cast<int>(ops_.size()) &&
                           first_difference(model_after(ops_, acks.last + 1), got).empty();
    if (!next_done) {
      fail("the op tables are not what the acknowledged ops " + std::string(final ? "" : "(and maybe the next) ") +
           "leave, 1.." + std::to_string(acks.last) + ": " + diff + "; stored: " + describe(got));
    }
  }

  // 2. Each acknowledged start happened exactly once; no start is there twice. Events and
  // calls carry their op number; record triggers name the record.
  for (const auto& [key, list] : by_key) {
    if (list.size() > 1) fail("started " + std::to_string(list.size()) + " times: " + key + " (" + list[0]->id + ", " + list[1]->id + ")");
  }
  const int limit = std::min(acks.last, static_cast<int>(ops_.size()));
  for (int i = 0; i < limit; ++i) {
    const Op& op = ops_[static_cast<size_t>(i)];
    std::string key;
    switch (op.kind) {
      case OpKind::kInsertItem: key = "audit_item " + op.sys_id; break;
      case OpKind::kInsertRequest: key = "hold_request " + op.sys_id; break;
      case OpKind::kPing: key = "ping_wait op " + std::to_string(op.n); break;
      case OpKind::kCallJob: key = "api_job op " + std::to_string(op.n); break;
      default: break;
    }
    if (key.empty()) continue;
    if (!by_key.count(key)) {
      fail("op " + std::to_string(op.n) + " (" + op_kind_name(op.kind) + ") was acknowledged but its context is not in the file: " + key);
      continue;
    }
    auto call = acks.call_ids.find(op.n);
    if (call != acks.call_ids.end() && by_key[key][0]->id != call->second) {
      fail("call_flow of op " + std::to_string(op.n) + " returned " + call->second + " but the file has " + by_key[key][0]->id);
    }
  }
  for (const StoredContext& c : s.contexts) {
    const Value& op = c.trigger["payload"]["op"];
    if (op.is_int() && op.as_int() > acks.last + (final ? 0 : 1)) {
      fail(c.id + " (" + context_key(c) + ") started for an op that was never run");
    }
  }

  // 3. No lock is held or waited for by a context that does not exist or has ended.
  for (const StoredLock& lock : s.locks) {
    for (const char* role : {"holders", "waiters"}) {
      for (const Value& h : lock.state[role].items()) {
        const std::string id(h["context"].as_string());
        auto it = by_id.find(id);
        if (it == by_id.end()) {
          fail("lock " + lock.name + " lists " + id + " among its " + role + ", a context not in the file");
        } else if (is_final_context_status(it->second->status)) {
          fail("lock " + lock.name + " lists " + id + " among its " + role + ", but it ended (" + it->second->status + ")");
        }
      }
    }
  }

  // 4. No fencing token was given twice (here or at any earlier check of this seed), and
  // none is above the last token the file counts.
  std::map<std::string, int64_t> grant_of;
  for (const Value& g : records_of(s, "grant")) {
    const int64_t token = g["token"].as_int();
    const std::string request(g["request"].as_string());
    grant_of[request] = token;
    auto [it, fresh] = token_owner_.emplace(token, request);
    if (!fresh && it->second != request) {
      fail("fencing token " + std::to_string(token) + " was given twice: to " + it->second + "'s context and to " + request + "'s");
    }
    if (token > s.counters.fencing_token) {
      fail("fencing token " + std::to_string(token) + " is above the last one the file counts (" +
           std::to_string(s.counters.fencing_token) + ")");
    }
  }
  for (const Value& o : records_of(s, "outcome")) {
    const std::string request(o["request"].as_string());
    auto it = grant_of.find(request);
    if (it == grant_of.end() || it->second != o["token"].as_int()) {
      fail("the outcome of " + request + " was written with token " + o["token"].to_json() + ", not its grant's");
    }
  }
  for (const StoredContext& c : s.contexts) {
    if (c.flow != "hold_request" || c.record.is_null()) continue;
    for (const Value& step : c.record.value()["steps"].items()) {
      if (step["id"] != Value("lk") || !step["outputs"]["token"].is_int()) continue;
      const int64_t token = step["outputs"]["token"].as_int();
      auto [it, fresh] = token_owner_.emplace(token, std::string(c.trigger["sys_id"].as_string()));
      if (!fresh && it->second != c.trigger["sys_id"].as_string()) {
        fail("fencing token " + std::to_string(token) + " was given twice: " + c.id + " (for " +
             std::string(c.trigger["sys_id"].as_string()) + ") has it and so had " + it->second + "'s context");
      }
    }
  }

  // 4b. The file's clock is not behind anything it holds (a restart goes on from it: behind
  // would move time backwards).
  TimeMs latest = -1;
  std::string latest_what;
  auto seen = [&](TimeMs t, const std::string& what) {
    if (t > latest) {
      latest = t;
      latest_what = what;
    }
  };
  for (const StoredContext& c : s.contexts) {
    seen(c.started, c.id + " started");
    seen(c.ended, c.id + " ended");
    if (c.trigger["time"].is_int()) seen(c.trigger["time"].as_int(), c.id + "'s trigger");
  }
  for (const StoredDefinition& d : s.definitions) seen(d.last_tick, d.id + "'s last schedule occurrence");
  if (s.counters.clock >= 0 && latest > s.counters.clock) {
    fail("the file's clock (" + std::to_string((s.counters.clock - kStart) / 60000) + "m) is behind " + latest_what +
         " (" + std::to_string((latest - kStart) / 60000) + "m)");
  }

  // 5. No flow wrote a record twice (a built-in action's write and the step past it commit
  // together, so a crash never repeats one).
  for (const FlowTable& ft : flow_tables()) {
    std::set<std::string> keys;
    for (const Value& r : records_of(s, ft.name)) {
      std::string key;
      for (const char* f : ft.key_fields) key += r[f].to_json() + " ";
      if (!keys.insert(key).second) fail("table " + std::string(ft.name) + " has the row for " + key + "twice");
    }
  }

  // 6. The custom action ran (at least once) for every step whose record says it completed.
  const std::set<std::string> lines = side_lines(side_file_);
  for (const StoredContext& c : s.contexts) {
    if (c.record.is_null()) continue;
    for (const Value& step : c.record.value()["steps"].items()) {
      if (step["id"] != Value("side") || step["status"] != Value("completed")) continue;
      const std::string key = c.flow == "api_job" ? "job-" + op_of_payload(c.trigger) : std::string(c.trigger["sys_id"].as_string());
      if (!lines.count(c.id + " " + key)) fail(c.id + "'s custom action step completed but its call is not in the side file");
    }
  }

  if (final) {
    // 7. At the end nothing is left unfinished and no lock is held.
    for (const StoredContext& c : s.contexts) {
      if (!is_final_context_status(c.status)) fail(c.id + " (" + context_key(c) + ") is still " + c.status + " at the end");
    }
    for (const StoredLock& lock : s.locks) fail("lock " + lock.name + " is still in the file at the end: " + lock.state.to_json());
    // 8. The schedule (every 30m from its activation at the start) started a context for
    // each occurrence up to the end, once, on its rhythm: restarts neither skip nor shift
    // one. (Whether each wrote its tick row depends on resuming: the resume variant.)
    std::set<int64_t> ticks;
    for (const StoredContext& c : s.contexts) {
      if (c.flow == "tick") ticks.insert(c.trigger["time"].is_int() ? c.trigger["time"].as_int() : -1);
    }
    std::set<int64_t> want_ticks;
    for (TimeMs t = kStart + kTickEvery; t <= kStart + final_target(ops_); t += kTickEvery) want_ticks.insert(t);
    if (ticks != want_ticks) {
      std::string got_list;
      for (int64_t t : ticks) got_list += " " + std::to_string((t - kStart) / 60000) + "m";
      fail("the schedule fired at" + got_list + " (minutes from the start), not every 30m up to " +
           std::to_string(final_target(ops_) / 60000) + "m");
    }
  }
}

std::vector<std::string> CrashChecker::after_kill(const StoredState& s, const Acks& acks) {
  std::vector<std::string> out;
  check_common(s, acks, false, out);
  return out;
}

std::vector<std::string> CrashChecker::at_end(const StoredState& s, const Acks& acks) {
  std::vector<std::string> out;
  if (acks.last != static_cast<int>(ops_.size())) {
    out.push_back("done after " + std::to_string(acks.last) + " of " + std::to_string(ops_.size()) + " ops acknowledged");
  }
  check_common(s, acks, true, out);
  return out;
}

std::vector<std::string> CrashChecker::as_without_crash(const StoredState& s, const StoredState& reference,
                                                        const std::string& reference_side_file) const {
  std::vector<std::string> out;
  // Contexts: the same starts, ending the same way.
  std::map<std::string, const StoredContext*> got;
  std::map<std::string, const StoredContext*> want;
  for (const StoredContext& c : s.contexts) got[context_key(c)] = &c;
  for (const StoredContext& c : reference.contexts) want[context_key(c)] = &c;
  for (const auto& [key, w] : want) {
    auto it = got.find(key);
    if (it == got.end()) {
      out.push_back("[resume] " + key + " ran without the crash (" + w->status + ") but not with it");
    } else if (it->second->status != w->status) {
      std::string why;
      if (!it->second->record.is_null()) why = std::string(it->second->record.value()["error"]["message"].as_string());
      out.push_back("[resume] " + key + " (" + it->second->id + ") ended " + it->second->status + ", without the crash " +
                    w->status + (why.empty() ? "" : ": " + why));
    }
  }
  for (const auto& [key, g] : got) {
    if (!want.count(key)) out.push_back("[resume] " + key + " (" + g->id + ") ran with the crash but not without it");
  }
  // Flow-written records: the same rows (generated sys_ids aside).
  for (const FlowTable& ft : flow_tables()) {
    std::multiset<std::string> a;
    std::multiset<std::string> b;
    for (const Value& r : records_of(s, ft.name)) a.insert(without_sys_id(r));
    for (const Value& r : records_of(reference, ft.name)) b.insert(without_sys_id(r));
    for (const std::string& r : b) {
      if (!a.count(r)) out.push_back("[resume] table " + std::string(ft.name) + " lacks " + r + " (written without the crash)");
    }
    for (const std::string& r : a) {
      if (!b.count(r)) out.push_back("[resume] table " + std::string(ft.name) + " has " + r + " (not written without the crash)");
    }
  }
  // Each lock was granted to the same requests in the same order.
  const auto got_order = grant_order(s);
  const auto want_order = grant_order(reference);
  for (const auto& [lock, want_list] : want_order) {
    auto it = got_order.find(lock);
    const std::vector<std::string> got_list = it == got_order.end() ? std::vector<std::string>{} : it->second;
    if (got_list != want_list) {
      std::string a, b;
      for (const std::string& r : got_list) a += " " + r;
      for (const std::string& r : want_list) b += " " + r;
      out.push_back("[resume] lock " + lock + " was granted to" + a + ", without the crash to" + b);
    }
  }
  // The custom action ran for every call it had without the crash (keys; context ids may differ).
  std::set<std::string> keys;
  for (const std::string& l : side_lines(side_file_)) keys.insert(l.substr(l.find(' ') + 1));
  for (const std::string& l : side_lines(reference_side_file)) {
    const std::string key = l.substr(l.find(' ') + 1);
    if (!keys.count(key)) out.push_back("[resume] the custom action never ran for " + key + " (it did without the crash)");
  }
  return out;
}

}  // namespace flowrt::crash
