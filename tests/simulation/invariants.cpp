#include "tests/simulation/invariants.h"

#include <algorithm>
#include <set>

#include "tests/simulation/generator.h"
#include "tests/simulation/sim_json.h"

namespace flowrt::sim {
namespace {

bool is_leaf_wait(std::string_view action) { return action == "wait" || action == "wait_for_condition" || action == "lock"; }

// A lock step that found its lock already held by its context: no new grant, no new token.
bool reentered(const Value& ctx, const Value& step) {
  for (const Value& l : ctx["logs"].items()) {
    if (l["step"] == step["path"] && l["message"].as_string().find("already held") != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

// ---- (b) ----

void check_contexts(const Snapshot& s, Moment m, Violations* out) {
  const std::string inv = "(b) contexts ended or waiting on something that exists";
  for (const Value& c : s.contexts) {
    const std::string id = str(c["id"]);
    const std::string status = str(c["status"]);
    if (terminal(c)) {
      if (ms(c["ended_at"]) < 0 || ms(c["started_at"]) < 0) add(out, inv, id + " ended without started_at/ended_at", c);
      for (const Value& st : c["steps"].items()) {
        const std::string_view ss = st["status"].as_string();
        if (ss == "waiting" || ss == "in_progress") {
          add(out, inv, id + " ended " + status + " with step " + str(st["path"]) + " still " + std::string(ss), c);
          break;
        }
      }
      if (status == "completed" && !c["error"].is_null()) add(out, inv, id + " completed with an error", c);
      if (status == "error" && !c["error"]["message"].is_string()) add(out, inv, id + " in error without a message", c);
      continue;
    }
    if (m == Moment::kBetweenSteps) continue;  // running, queued or just woken: legal mid-run
    if (status != "waiting") {
      if (m == Moment::kAfterOperation && status == "in_progress" && c["started_at"].is_null()) continue;  // queued
      add(out, inv, id + " is " + status + (m == Moment::kAfterOperation ? " although it has started and no context runs between operations" : " although no context can run (after settle/advance)"), c);
      continue;
    }
    if (m == Moment::kEnd) {
      add(out, inv, id + " still waits after the final long settle (every wait in the simulation is bounded)", c);
      continue;
    }
    std::vector<const Value*> leaves;
    for (const Value& st : c["steps"].items()) {
      if (st["status"].as_string() == "waiting" && is_leaf_wait(st["action"].as_string())) leaves.push_back(&st);
    }
    if (leaves.size() != 1) {
      add(out, inv, id + " is waiting with " + std::to_string(leaves.size()) + " waiting wait/lock steps (want 1)", c);
      continue;
    }
    const Value& st = *leaves[0];
    const std::string_view action = st["action"].as_string();
    const Value& in = st["inputs"];
    const TimeMs started = ms(st["started_at"]);
    if (action == "wait") {
      Result<DurationMs> d = parse_duration(in["duration"]);
      if (!d || started + *d <= s.now) {
        add(out, inv, id + " waits on a timer that is not in the future (due " +
                          (d ? format_time(started + *d) : std::string("?")) + ", now " + format_time(s.now) + ")", c);
      }
    } else if (action == "wait_for_condition") {
      const Value* r = s.record(str(in["table"]), in["sys_id"].as_string());
      if (!r && m == Moment::kAfterOperation) continue;  // deleted by the operation: woken, runs at the next settle
      if (!r) {
        add(out, inv, id + " waits for a condition on a record that does not exist: " + str(in["table"]) + "/" +
                          str(in["sys_id"]), c);
        continue;
      }
      if (!in["timeout"].is_null()) {
        Result<DurationMs> d = parse_duration(in["timeout"]);
        if (!d || started + *d <= s.now) add(out, inv, id + " waits for a condition past its timeout", c);
      }
      const Value& cond = in["condition"];
      if (cond["field"].is_string() && cond["op"].is_string()) {
        FieldCondition fc{str(cond["field"]), str(cond["op"]), cond["value"]};
        // As the record is now, its own previous version: a changes op is met only by a
        // write, which would have woken it (the engine's own liveness check reads it so).
        if (m != Moment::kAfterOperation && model_condition_holds(fc, *r, r)) {
          add(out, inv, id + " still waits although its record meets the condition (a lost wake-up): " + r->to_json(), c);
        }
      }
    } else {  // lock
      const std::string key = str(in["key"]);
      bool queued = false;
      for (const Value& l : s.locks.items()) {
        if (l["name"].as_string() != key) continue;
        for (const Value& w : l["waiters"].items()) {
          if (w["context"].as_string() == id) {
            queued = true;
            if (ms(w["gives_up_at"]) <= s.now) add(out, inv, id + " waits for lock '" + key + "' past its give-up time", c);
          }
        }
      }
      if (!queued) add(out, inv, id + " waits on lock '" + key + "' but is in no queue of Engine::locks()", c);
    }
  }
}

// ---- (c) ----

void check_locks(const Snapshot& s, const std::map<std::string, int64_t>& declared_limits, Moment m,
                 Violations* out) {
  const std::string inv = "(c) locks";
  if (m == Moment::kEnd && s.locks.size() > 0) add(out, inv, "locks still held or waited for after the final settle", s.locks);
  for (const Value& l : s.locks.items()) {
    const std::string name = str(l["name"]);
    auto lim = declared_limits.find(name);
    const int64_t limit = lim == declared_limits.end() ? 1 : lim->second;
    if (l["limit"].as_int() != limit) add(out, inv, "lock '" + name + "' has limit " + l["limit"].to_json() + ", declared " + std::to_string(limit), l);
    int64_t held = 0;
    std::set<std::string> holders;
    for (const Value& h : l["holders"].items()) {
      held += h["weight"].as_int();
      const std::string who = str(h["context"]);
      holders.insert(who);
      const Value* c = s.context(who);
      if (!c || terminal(*c)) {
        add(out, inv, "lock '" + name + "' is held by " + who + (c ? ", which has ended (" + str((*c)["status"]) + ")" : ", which does not exist"),
            c ? *c : l);
      }
    }
    if (held != l["held"].as_int()) add(out, inv, "lock '" + name + "': held " + l["held"].to_json() + " but holders weigh " + std::to_string(held), l);
    if (held > limit) add(out, inv, "lock '" + name + "': holders weigh " + std::to_string(held) + ", over its limit " + std::to_string(limit), l);
    bool head = true;
    for (const Value& w : l["waiters"].items()) {
      const std::string who = str(w["context"]);
      const Value* c = s.context(who);
      if (!c || terminal(*c)) {
        add(out, inv, "lock '" + name + "' has waiter " + who + (c ? ", which has ended" : ", which does not exist"), c ? *c : l);
        continue;
      }
      if (holders.count(who)) add(out, inv, who + " both holds and waits for lock '" + name + "'", l);
      bool waits_here = false;
      for (const Value& st : (*c)["steps"].items()) {
        waits_here = waits_here || (st["action"].as_string() == "lock" && st["status"].as_string() == "waiting" &&
                                    st["inputs"]["key"].as_string() == name);
      }
      if (!waits_here) add(out, inv, who + " is queued for lock '" + name + "' but no lock step of it waits for that lock", *c);
      if (head && m != Moment::kBetweenSteps && held + w["weight"].as_int() <= limit) {
        add(out, inv, "lock '" + name + "': head waiter " + who + " fits (held " + std::to_string(held) + " + " +
                          w["weight"].to_json() + " <= " + std::to_string(limit) + ") but was not granted", l);
      }
      head = false;
    }
  }
  // Fencing tokens: one counter over every name, a new token at every grant.
  struct Grant {
    int64_t token;
    TimeMs at;
    std::string who;
  };
  std::vector<Grant> grants;
  for (const Value& c : s.contexts) {
    for (const Value& st : c["steps"].items()) {
      if (st["action"].as_string() != "lock" || st["status"].as_string() != "completed") continue;
      if (st["outputs"]["result"].as_string() != "success" || reentered(c, st)) continue;
      // The grant's own log line has its time (on a real clock the step resumes a moment later).
      TimeMs at = ms(st["ended_at"]);
      for (const Value& l : c["logs"].items()) {
        if (l["step"] == st["path"] && l["message"].as_string().find("': granted") != std::string_view::npos) at = ms(l["time"]);
      }
      grants.push_back(Grant{st["outputs"]["token"].as_int(), at, str(c["id"]) + " step " + str(st["path"])});
    }
  }
  std::sort(grants.begin(), grants.end(), [](const Grant& a, const Grant& b) { return a.token < b.token; });
  for (size_t i = 1; i < grants.size(); ++i) {
    if (grants[i].token == grants[i - 1].token) {
      add(out, inv, "fencing token " + std::to_string(grants[i].token) + " granted twice: " + grants[i - 1].who + " and " + grants[i].who);
    } else if (grants[i].at < grants[i - 1].at) {
      add(out, inv, "fencing tokens do not grow with grant time: token " + std::to_string(grants[i - 1].token) + " (" +
                        grants[i - 1].who + ") at " + format_time(grants[i - 1].at) + ", token " +
                        std::to_string(grants[i].token) + " (" + grants[i].who + ") at " + format_time(grants[i].at));
    }
  }
}

// ---- (d) ----

void check_fifo(const Snapshot& s, Violations* out, bool virtual_clock) {
  const std::string inv = "(d) seq / FIFO order";
  TimeMs last_start = -1;
  std::string last_id;
  for (size_t i = 0; i < s.contexts.size(); ++i) {
    const Value& c = s.contexts[i];
    const int64_t seq = c["seq"].as_int();
    if (seq != static_cast<int64_t>(i) + 1 || c["id"].as_string() != "ctx-" + std::to_string(seq)) {
      add(out, inv, "context #" + std::to_string(i + 1) + " has seq " + std::to_string(seq) + " and id " + str(c["id"]), c);
      return;
    }
    const TimeMs started = ms(c["started_at"]);
    if (started < 0) continue;  // still queued
    if (virtual_clock && started < last_start) {
      add(out, inv, str(c["id"]) + " started at " + str(c["started_at"]) + ", before " + last_id + " (" +
                        format_time(last_start) + "), which comes earlier in the queue", c);
    }
    const TimeMs ended = ms(c["ended_at"]);
    if (ended >= 0 && ended < started) add(out, inv, str(c["id"]) + " ended before it started", c);
    last_start = started;
    last_id = str(c["id"]);
  }
}

// ---- (e) counters ----

void check_counters(const Snapshot& s, const std::vector<std::string>& keys, Violations* out) {
  const std::string inv = "(e) counters (mutual exclusion)";
  auto table = s.records.find(kCounterTable);
  for (const std::string& key : keys) {
    const Value* counter = nullptr;
    if (table != s.records.end()) {
      for (const Value& r : table->second) {
        if (r["name"].as_string() == key) counter = &r;
      }
    }
    if (!counter) {
      add(out, inv, "no counter record for lock '" + key + "'");
      continue;
    }
    const std::string sys_id = str((*counter)["sys_id"]);
    const std::string inc = "inc " + key;
    std::vector<std::pair<int64_t, std::string>> written;  // n written, by whom
    int64_t inc_logs = 0;
    for (const Value& c : s.contexts) {
      int64_t updates = 0, logs = 0;
      for (const Value& st : c["steps"].items()) {
        if (st["action"].as_string() == "update_record" && st["status"].as_string() == "completed" &&
            st["inputs"]["table"].as_string() == kCounterTable && st["inputs"]["sys_id"].as_string() == sys_id) {
          ++updates;
          written.emplace_back(st["outputs"]["record"]["n"].as_int(), str(c["id"]) + " step " + str(st["path"]));
        }
      }
      for (const Value& l : c["logs"].items()) logs += l["message"].as_string() == inc;
      inc_logs += logs;
      // No context parks between its update and its log, and a cancel only takes effect
      // at a park, so each update is followed by its log.
      if (logs != updates) {
        add(out, inv, str(c["id"]) + " logged \"" + inc + "\" " + std::to_string(logs) + " times but incremented counter " +
                          key + " " + std::to_string(updates) + " times", c);
      }
    }
    std::sort(written.begin(), written.end());
    const int64_t n = (*counter)["n"].as_int();
    if (n != inc_logs) {
      add(out, inv, "counter " + key + " is " + std::to_string(n) + " but \"" + inc + "\" was logged " +
                        std::to_string(inc_logs) + " times", *counter);
    }
    if (n != static_cast<int64_t>(written.size())) {
      add(out, inv, "counter " + key + " is " + std::to_string(n) + " but " + std::to_string(written.size()) +
                        " lock-guarded increments completed", *counter);
    }
    for (size_t i = 0; i < written.size(); ++i) {
      if (written[i].first != static_cast<int64_t>(i) + 1) {
        std::string list;
        for (const auto& [w, by] : written) list += std::to_string(w) + " (" + by + ") ";
        add(out, inv, "the increments of counter " + key + " wrote n = " + list + "(want 1.." + std::to_string(written.size()) +
                          ", each once): two holders read the same n", *counter);
        break;
      }
    }
  }
}

}  // namespace flowrt::sim
