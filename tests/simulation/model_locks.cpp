// Model, the lock half: every lock step of every context, with its parameters (SPEC 8's
// defaults where the definition gives none) and what became of it, checked against the
// rules of SPEC 8 computed from the definitions rather than from the engine's lock table:
// give-up times ((max_attempts - 1) x delay after the request), leases (a hold ends at
// max_duration unless released before, with its log line), writes while_holding (refused
// with lock_lost exactly when the lock is no longer held), weights within limits at every
// grant, FIFO (nobody granted while a request made before it still waits), a queued
// request really found the lock taken, deadlock refusals name a real cycle, and no cycle
// of waiting contexts is left unrefused.
#include <algorithm>
#include <limits>

#include "tests/simulation/model.h"
#include "tests/simulation/sim_json.h"

namespace flowrt::sim {
namespace {

const std::string kInvL = "(c) locks";
constexpr TimeMs kNever = std::numeric_limits<TimeMs>::max();

struct Use {
  std::string ctx;
  int64_t seq = 0;
  size_t index = 0;  // of the step in its context
  const Value* step = nullptr;
  std::string key;
  int64_t weight = 1, max_attempts = 1;
  DurationMs delay = 1000, max_duration = 3600000;
  TimeMs requested = 0, ended = kNever;
  TimeMs decided = kNever;  // when it was granted or refused: its log line's time (the step may resume later)
  std::string state;  // finished, timeout, deadlock, error; "waiting"; "ended" (context ended meanwhile)
  bool queued = false, reentered = false;
  int64_t token = -1;
  TimeMs released = kNever;
  // On the real clock an unlock step ends a moment after its release (and after the grant
  // the release made): the release was at or after the step's start.
  TimeMs released_from = kNever;
  std::string released_how;  // unlock, lease, end
  size_t unlock_index = SIZE_MAX;
};

int64_t int_or(const Value& v, int64_t fallback) { return v.is_int() ? v.as_int() : fallback; }

DurationMs duration_or(const Value& v, DurationMs fallback) {
  if (v.is_null()) return fallback;
  Result<DurationMs> d = parse_duration(v);
  return d ? *d : fallback;
}

std::string between(std::string_view s, std::string_view a, std::string_view b) {
  const size_t i = s.find(a);
  if (i == std::string_view::npos) return "";
  const size_t j = s.find(b, i + a.size());
  return std::string(s.substr(i + a.size(), j == std::string_view::npos ? std::string_view::npos : j - i - a.size()));
}

// Every lock step of `c`, with what became of its request and hold.
void collect(const Value& c, std::vector<Use>* out) {
  const auto steps = c["steps"].items();
  const std::string id = str(c["id"]);
  for (size_t i = 0; i < steps.size(); ++i) {
    const Value& st = steps[i];
    if (st["action"].as_string() != "lock") continue;
    Use u;
    u.ctx = id;
    u.seq = c["seq"].as_int();
    u.index = i;
    u.step = &st;
    const Value& in = st["inputs"];
    u.key = str(in["key"]);
    u.weight = int_or(in["weight"], 1);
    u.max_attempts = int_or(in["max_attempts"], 1);
    u.delay = duration_or(in["delay"], 1000);
    u.max_duration = duration_or(in["max_duration"], 3600000);
    u.requested = ms(st["started_at"]);
    const std::string status = str(st["status"]);
    if (status == "waiting" || status == "in_progress") {
      u.state = "waiting";
    } else {
      u.ended = ms(st["ended_at"]);
      u.state = st["outputs"]["state"].is_string() ? str(st["outputs"]["state"]) : "ended";
    }
    for (const Value& l : c["logs"].items()) {
      if (!(l["step"] == st["path"])) continue;
      const std::string_view m = l["message"].as_string();
      u.queued = u.queued || m.find("': waiting;") != std::string_view::npos;
      u.reentered = u.reentered || m.find("already held") != std::string_view::npos;
      if (m.find("': granted") != std::string_view::npos || m.find("refused") != std::string_view::npos ||
          m.find("not granted") != std::string_view::npos) {
        u.decided = ms(l["time"]);
      }
    }
    if (u.decided == kNever) u.decided = u.ended;
    if (u.state == "finished") u.token = st["outputs"]["token"].as_int();
    if (u.state == "finished" && !u.reentered) {
      // The hold ends at the first of: its context's next unlock of the key, its lease's
      // expiry line (at a tie with the unlock, the lease line), its context's end.
      for (size_t j = i + 1; j < steps.size(); ++j) {
        const Value& un = steps[j];
        if (un["action"].as_string() == "unlock" && un["inputs"]["key"].as_string() == u.key &&
            un["status"].as_string() == "completed") {
          u.unlock_index = j;
          if (un["outputs"]["released"].as_bool()) {
            u.released = ms(un["ended_at"]);
            u.released_from = ms(un["started_at"]);
            u.released_how = "unlock";
          }
          break;
        }
      }
      const std::string lease = "lock '" + u.key + "' (token " + std::to_string(u.token) + "): held for its max_duration";
      const std::string at_end = "lock '" + u.key + "': released as the context ended";
      for (const Value& l : c["logs"].items()) {
        const TimeMs t = ms(l["time"]);
        // A lease line names the hold's token, so it is that hold's end, also when an unlock
        // came in the same millisecond: that unlock released a later hold of the key (its
        // context locked it again), since one that released this hold leaves no lease line.
        if (l["message"].as_string().starts_with(lease) && t <= u.released) {
          u.released = u.released_from = t;
          u.released_how = "lease";
        }
        if (l["message"].as_string() == at_end && t >= u.decided && u.released == kNever) {
          u.released = u.released_from = t;
          u.released_how = "end";
        }
      }
    }
    out->push_back(u);
  }
}

}  // namespace

void Model::lock_checks(const Snapshot& snap, bool quiescent, Violations* out) {
  std::vector<Use> uses;
  for (const Value& c : snap.contexts) collect(c, &uses);
  const bool exact = !real_clock_;
  auto fail = [&](const Use& u, const std::string& what) {
    add(out, kInvL, u.ctx + " step " + str((*u.step)["path"]) + " (lock '" + u.key + "'): " + what, *snap.context(u.ctx));
  };
  std::map<std::string, std::vector<const Use*>> by_key;
  for (const Use& u : uses) by_key[u.key].push_back(&u);

  for (const Use& u : uses) {
    const Value& o = (*u.step)["outputs"];
    const TimeMs give_up = u.requested + (u.max_attempts - 1) * u.delay;
    // Give-ups: at (max_attempts - 1) x delay after the request, from the definition.
    if (u.state == "timeout") {
      count("lock give-ups checked");
      const TimeMs want = u.queued ? give_up : u.requested;
      if (exact ? u.ended != want : u.ended < want) {
        fail(u, "gave up at " + format_time(u.ended) + ", want " + format_time(want) + " (max_attempts " + std::to_string(u.max_attempts) +
                    ", delay " + std::to_string(u.delay) + "ms" + (u.queued ? "" : ", and it never queued") + ")");
      }
      if (o["attempts"].as_int() != u.max_attempts) fail(u, "gave up after " + o["attempts"].to_json() + " attempts, want max_attempts");
    }
    if (u.state == "finished" && !u.reentered) {
      const TimeMs waited = u.decided - u.requested;
      // (On the real clock the request is stamped a moment after the step began.)
      if (exact ? o["waited_ms"].as_int() != waited : o["waited_ms"].as_int() > waited) {
        fail(u, "reports waited_ms " + o["waited_ms"].to_json() + ", its step waited " + std::to_string(waited));
      }
      if (exact && u.decided > give_up && u.queued) fail(u, "was granted at " + format_time(u.decided) + ", after its give-up time " + format_time(give_up));
      if (!u.queued && u.decided != u.requested && exact) fail(u, "was granted later than its request without queueing");
      if (exact && u.decided != u.ended) fail(u, "was granted at " + format_time(u.decided) + " but its step ended at " + format_time(u.ended));
      // Leases: the hold ends at max_duration after the grant unless released before.
      const TimeMs lease_end = u.decided + u.max_duration;
      if (u.released_how == "lease") {
        count("lease expiries checked");
        if (exact ? u.released != lease_end : u.released < lease_end) {
          fail(u, "its lease (max_duration " + std::to_string(u.max_duration) + "ms) ended at " + format_time(u.released) + ", want " +
                      format_time(lease_end));
        }
      } else if (exact && u.released > lease_end && (u.released != kNever || snap.now > lease_end)) {
        fail(u, "was held past its max_duration (" + std::to_string(u.max_duration) + "ms, from " + format_time(u.decided) +
                    ") with no expiry: still held at " + (u.released == kNever ? format_time(snap.now) : format_time(u.released)));
      }
      // Weights: the holds that certainly overlap this grant, and it, fit the limit.
      int64_t held = u.weight;
      for (const Use* h : by_key[u.key]) {
        if (h == &u || h->state != "finished" || h->reentered || h->token >= u.token) continue;
        if (h->released_from > u.decided) held += h->weight;
      }
      if (held > s_.limit_of(u.key)) {
        fail(u, "was granted (token " + std::to_string(u.token) + ") while holds weighing " + std::to_string(held - u.weight) +
                    " still held it: " + std::to_string(held) + " over its limit " + std::to_string(s_.limit_of(u.key)));
      }
    }
    // FIFO: nobody is granted while a request made before it (earlier in time) still waits.
    if (exact && u.queued) {
      for (const Use* b : by_key[u.key]) {
        if (b == &u || !b->queued || b->requested <= u.requested || b->state != "finished") continue;
        const bool still_waiting = (u.state == "finished" && u.token > b->token) || (u.state != "finished" && u.decided > b->decided);
        if (still_waiting) {
          fail(u, "requested at " + format_time(u.requested) + " and queued, but " + b->ctx + ", which asked later (" +
                      format_time(b->requested) + "), was granted first (token " + std::to_string(b->token) + ")");
        }
      }
      // A request that queued found the lock taken (or someone queued before it).
      bool taken = u.weight > s_.limit_of(u.key);
      int64_t weight = 0;
      for (const Use* h : by_key[u.key]) {
        if (h == &u) continue;
        if (h->state == "finished" && !h->reentered && h->decided <= u.requested && h->released >= u.requested) weight += h->weight;
        if (h->queued && h->requested <= u.requested && h->decided >= u.requested) taken = true;
      }
      if (!taken && weight + u.weight <= s_.limit_of(u.key)) {
        fail(u, "queued at " + format_time(u.requested) + " although no hold or earlier request stood in its way");
      }
    }
    // Deadlock refusals name a cycle that existed: each "X waits for lock 'k' held by Y"
    // (or "in the queue of lock 'k' behind Y") held at the moment of the refusal.
    if (u.state == "deadlock") {
      count("deadlocks refused");
      const std::string msg = str((*u.step)["error"]);
      std::string rest = msg.substr(msg.find("deadlock: ") == std::string::npos ? 0 : msg.find("deadlock: ") + 10);
      std::string who = "ctx-" + std::to_string(u.seq);
      std::set<std::string> named = {who};
      bool closes = false, refuted = false;
      for (int guard = 0; guard < 64 && !rest.empty(); ++guard) {
        const bool behind = rest.find(" waits in the queue of lock '") < rest.find(" waits for lock '");
        const std::string key = between(rest, "lock '", "'");
        const std::string next = "ctx-" + between(rest, behind ? "behind ctx-" : "held by ctx-", ",");
        const TimeMs t = u.decided;
        bool plausible = false;
        for (const Use* h : by_key[key]) {
          if (h->ctx != next) continue;
          if (behind) {
            plausible = plausible || (h->queued && h->requested <= t && h->decided >= t);
          } else {
            plausible = plausible || (h->state == "finished" && !h->reentered && h->decided <= t && h->released >= t);
          }
        }
        bool waits = who == u.ctx;
        for (const Use* w : by_key[key]) waits = waits || (w->ctx == who && w->requested <= t && w->decided >= t);
        if (!plausible || !waits) {
          fail(u, "was refused as a deadlock (" + msg + "), but at " + format_time(t) + " " + who + " did not wait for lock '" + key + "' " +
                      (behind ? "behind " : "held by ") + next + ": a refusal without a cycle");
          refuted = true;
          break;
        }
        who = next;
        // The named cycle goes through the requester: the path ends when it comes back to
        // it, and a path that repeats another context first names a loop the request did
        // not close (tests/runtime/lock_table_edges_test.cpp).
        if (next == u.ctx) {
          closes = true;
          break;
        }
        if (!named.insert(next).second) {
          fail(u, "was refused as a deadlock, but the cycle it names does not go through the requester " + u.ctx + ": " + msg);
          refuted = true;
          break;
        }
        const size_t which = rest.find(", which");
        if (which == std::string::npos) break;
        rest = rest.substr(which + 7);
      }
      if (!refuted && !closes) fail(u, "was refused as a deadlock, but the path it names never comes back to a context on it: " + msg);
    }
  }
  // Writes while_holding: refused with lock_lost exactly when the context no longer holds
  // the lock (its own steps order its grant, its write and its unlock; a lease expiring
  // at the very moment of the write may come first or second).
  for (const Value& c : snap.contexts) {
    const auto steps = c["steps"].items();
    for (size_t i = 0; i < steps.size(); ++i) {
      const Value& st = steps[i];
      const std::string_view action = st["action"].as_string();
      if (action != "create_record" && action != "update_record" && action != "delete_record") continue;
      const std::string key = str(st["inputs"]["while_holding"]);
      if (key.empty() || st["status"].as_string() == "in_progress") continue;
      const TimeMs t = ms(st["started_at"]);
      int held = 0;  // 0 no, 1 yes, 2 either
      for (const Use* h : by_key[key]) {
        if (h->ctx != str(c["id"]) || h->state != "finished" || h->reentered || h->index > i) continue;
        if (h->released_how == "unlock" && h->unlock_index < i) continue;
        if (h->released_how == "lease" && h->released < t) continue;
        held = std::max(held, h->released_how == "lease" && h->released == t ? 2 : 1);
      }
      const bool lost = st["status"].as_string() == "error" && st["error"].as_string().starts_with("lock_lost");
      const bool cancelled = st["status"].as_string() == "error" && !lost;
      if (cancelled || held == 2) continue;
      if ((held == 1) == lost) {
        add(out, kInvL, str(c["id"]) + " step " + str(st["path"]) +
                            (lost ? " was refused with lock_lost although its context holds lock '" + key + "'"
                                  : " wrote while_holding lock '" + key + "', which its context no longer held (a stale holder wrote)"),
            c);
      }
      if (lost) count("lock_lost checked");
    }
  }
  if (!quiescent || !out->empty()) return;
  // No cycle of waiting contexts is left: every one was refused when it would have closed.
  // A waiter can proceed when the holds that cannot proceed leave room for its weight
  // (and requests made strictly earlier on its lock can too); what cannot is deadlocked.
  std::vector<const Use*> waiting;
  for (const Use& u : uses) {
    if (u.state == "waiting") waiting.push_back(&u);
  }
  std::set<std::string> proceeds;
  auto can_proceed = [&](const std::string& ctx) {
    return proceeds.count(ctx) || std::none_of(waiting.begin(), waiting.end(), [&](const Use* w) { return w->ctx == ctx; });
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (const Use* w : waiting) {
      if (proceeds.count(w->ctx)) continue;
      int64_t stuck = 0;
      bool ahead_stuck = false;
      for (const Use* h : by_key[w->key]) {
        if (h->state == "finished" && !h->reentered && h->released == kNever && !can_proceed(h->ctx)) stuck += h->weight;
        if (h->state == "waiting" && h->requested < w->requested && !can_proceed(h->ctx)) ahead_stuck = true;
      }
      if (!ahead_stuck && s_.limit_of(w->key) - stuck >= w->weight) {
        proceeds.insert(w->ctx);
        changed = true;
      }
    }
  }
  for (const Use* w : waiting) {
    if (!proceeds.count(w->ctx)) {
      add(out, kInvL, w->ctx + " waits for lock '" + w->key + "' in a cycle of contexts waiting for each other that was never refused (a deadlock not refused)",
          *snap.context(w->ctx));
      return;
    }
  }
}

}  // namespace flowrt::sim
