#include "runtime/lock_table.h"

#include <algorithm>
#include <deque>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace flowrt {
namespace {

std::string ctx_name(uint64_t who) { return "ctx-" + std::to_string(who); }

}  // namespace

Value lock_state_value(const LockState& s) {
  auto ctx_id = [](uint64_t seq) { return Value(std::string_view("ctx-" + std::to_string(seq))); };
  auto time = [](TimeMs t) { return Value(std::string_view(format_time(t))); };
  std::vector<Value> holders, waiters;
  for (const LockHolderState& h : s.holders) {
    holders.push_back(Value::object({{"context", ctx_id(h.who)},
                                     {"weight", Value(static_cast<long long>(h.weight))},
                                     {"token", Value(static_cast<long long>(h.token))},
                                     {"acquired_at", time(h.acquired_at)},
                                     {"expires_at", time(h.expires_at)}}));
  }
  for (const LockWaiterState& w : s.waiters) {
    waiters.push_back(Value::object({{"context", ctx_id(w.who)},
                                     {"weight", Value(static_cast<long long>(w.weight))},
                                     {"requested_at", time(w.requested_at)},
                                     {"gives_up_at", time(w.give_up_at)}}));
  }
  return Value::object({{"name", Value(std::string_view(s.name))},
                        {"limit", Value(static_cast<long long>(s.limit))},
                        {"held", Value(static_cast<long long>(s.held))},
                        {"last_token", Value(static_cast<long long>(s.last_token))},
                        {"holders", Value::array(std::move(holders))},
                        {"waiters", Value::array(std::move(waiters))}});
}

LockTable::Locks::iterator LockTable::entry(std::string_view name) {
  auto it = locks_.find(name);
  if (it == locks_.end()) it = locks_.emplace(std::string(name), Entry{}).first;
  return it;
}

const LockTable::ContextLocks* LockTable::context_locks(uint64_t who) const {
  auto it = contexts_.find(who);
  return it == contexts_.end() ? nullptr : &it->second;
}

void LockTable::forget_context_if_idle(std::unordered_map<uint64_t, ContextLocks>::iterator it) {
  if (it->second.idle()) contexts_.erase(it);
}

bool LockTable::holds_any(uint64_t who) const {
  const ContextLocks* c = context_locks(who);
  return c && !c->held.empty();
}

bool LockTable::waiting(uint64_t who) const {
  const ContextLocks* c = context_locks(who);
  return c && c->waiting_for;
}

void LockTable::set_limit(std::string_view name, int64_t limit) {
  Entry& e = entry(name)->second;
  e.limit = limit;
  e.declared = true;
}

int64_t LockTable::limit(std::string_view name) const {
  auto it = locks_.find(name);
  return it == locks_.end() ? 1 : it->second.limit;
}

void LockTable::note_changed(std::string_view name) {
  if (!track_changes_) return;
  if (std::find(changed_.begin(), changed_.end(), name) == changed_.end()) changed_.emplace_back(name);
}

std::vector<std::string> LockTable::take_changed() {
  std::vector<std::string> out;
  out.swap(changed_);
  return out;
}

std::optional<LockState> LockTable::state(std::string_view name) const {
  auto it = locks_.find(name);
  if (it == locks_.end() || (it->second.holders.empty() && it->second.queue.empty())) return std::nullopt;
  const Entry& e = it->second;
  LockState s{it->first, e.limit, e.held, next_token_ - 1, {}, {}};
  for (const Holder& h : e.holders) s.holders.push_back({h.who, h.weight, h.token, h.acquired_at, h.expires_at});
  for (const Waiter& w : e.queue) s.waiters.push_back({w.who(), w.weight(), w.request.now, w.request.give_up_at});
  return s;
}

void LockTable::restore_last_token(int64_t token) { next_token_ = std::max(next_token_, token + 1); }

bool LockTable::restore_holder(uint64_t who, void* owner, std::string_view name, int64_t weight, int64_t token,
                               TimeMs acquired_at, TimeMs expires_at) {
  auto it = entry(name);
  Entry& e = it->second;
  if (weight < 1 || !e.fits(weight) || holds(who, name)) {
    forget_if_idle(name);
    return false;
  }
  e.holders.push_back(Holder{who, owner, weight, token, acquired_at, expires_at, TimerHandle{}});
  e.held += weight;
  contexts_[who].held.push_back(&it->first);
  next_token_ = std::max(next_token_, token + 1);
  note_changed(name);
  return true;
}

void LockTable::forget_if_idle(std::string_view name) {
  note_changed(name);
  auto it = locks_.find(name);
  if (it != locks_.end() && !it->second.declared && it->second.holders.empty() && it->second.queue.empty()) {
    locks_.erase(it);
  }
}

LockGrant LockTable::grant(Locks::value_type& lock, ContextLocks& c, const LockRequest& r, TimeMs now, bool queued) {
  const std::string& name = lock.first;
  Entry& e = lock.second;
  LockGrant g;
  g.who = r.who;
  g.owner = r.owner;
  g.name = name;
  g.weight = r.weight;
  // Tokens come from one counter over all names: they grow at every grant of any name,
  // so also at every grant of this one, and survive an idle name being forgotten.
  g.token = next_token_++;
  g.wait_id = r.wait_id;
  g.requested_at = r.now;
  g.granted_at = now;
  g.expires_at = add_duration(now, r.max_duration);
  g.was_queued = queued;
  g.step = r.step;
  g.max_attempts = r.max_attempts;
  g.delay = r.delay;
  e.holders.push_back(Holder{r.who, r.owner, r.weight, g.token, now, g.expires_at, TimerHandle{}});
  e.held += r.weight;
  c.held.push_back(&name);
  return g;
}

void LockTable::grant_waiters(Locks::value_type& lock, TimeMs now, std::vector<LockGrant>* granted) {
  const std::string& name = lock.first;
  Entry& e = lock.second;
  // First come, first served: the head is granted when it fits, and nobody passes it. A
  // placeholder at the head is granted when its context asks again (acquire), not here.
  while (!e.queue.empty() && !e.queue.front().placeholder && e.fits(e.queue.front().weight())) {
    Waiter w = std::move(e.queue.front());
    e.queue.pop_front();
    if (w.order <= e.last_granted_order && violation_.empty()) {
      violation_ = "lock '" + name + "' granted " + ctx_name(w.who()) + " out of queue order";
    }
    e.last_granted_order = w.order;
    ContextLocks& c = contexts_[w.who()];
    c.waiting_for = nullptr;
    LockGrant g = grant(lock, c, w.request, now, true);
    g.give_up_timer = w.give_up_timer;
    granted->push_back(std::move(g));
  }
}

bool LockTable::try_acquire(const LockRequest& r, AcquireOutcome* out) {
  auto it = locks_.find(r.name);
  if (it != locks_.end()) {
    const Entry& e = it->second;
    const bool held = std::any_of(e.holders.begin(), e.holders.end(), [&](const Holder& h) { return h.who == r.who; });
    if (!held && !(e.queue.empty() && e.fits(r.weight) && r.weight >= 1)) {
      hold_place(*it, r, out);
      return false;
    }
  } else if (r.weight != 1) {
    return false;  // let acquire() explain a weight that does not fit
  }
  *out = acquire(r);
  return out->kind == AcquireOutcome::Kind::kGranted || out->kind == AcquireOutcome::Kind::kReentered;
}

void LockTable::hold_place(Locks::value_type& lock, const LockRequest& r, AcquireOutcome* out) {
  Entry& e = lock.second;
  // Only a request that would wait: acquire() refuses or times out the others at once,
  // and a context waits in one queue at most.
  if (r.weight < 1 || r.weight > e.limit || r.give_up_at <= r.now || waiting(r.who)) return;
  out->kind = AcquireOutcome::Kind::kQueued;
  out->ahead = e.queue.size();
  e.queue.push_back(Waiter{r, TimerHandle{}, next_order_++, /*placeholder=*/true});
  contexts_[r.who].waiting_for = &lock.first;
  note_changed(lock.first);
}

std::deque<LockTable::Waiter>::iterator LockTable::place_of(Locks::value_type& lock, uint64_t who) {
  auto& queue = lock.second.queue;
  if (queue.empty()) return queue.end();  // the uncontended grant looks no further
  const ContextLocks* c = context_locks(who);
  if (!c || c->waiting_for != &lock.first) return queue.end();
  // Looked for from the back: a place was taken at the back just before its context
  // parked, so only the few who joined since stand behind it, however long the queue.
  for (auto w = queue.rbegin(); w != queue.rend(); ++w) {
    if (w->who() == who) return w->placeholder ? std::prev(w.base()) : queue.end();
  }
  return queue.end();
}

void LockTable::leave_queue(Locks::value_type& lock, std::deque<Waiter>::iterator it, TimeMs now,
                            std::vector<LockGrant>* granted) {
  const uint64_t who = it->who();
  lock.second.queue.erase(it);
  if (auto c = contexts_.find(who); c != contexts_.end()) {
    c->second.waiting_for = nullptr;
    forget_context_if_idle(c);
  }
  // It may have been the one holding up the others.
  grant_waiters(lock, now, granted);
  const std::string name = lock.first;  // the entry may be forgotten
  forget_if_idle(name);
}

bool LockTable::drop_place(uint64_t who, std::string_view name, TimeMs now, std::vector<LockGrant>* granted) {
  auto it = locks_.find(name);
  if (it == locks_.end()) return false;
  auto place = place_of(*it, who);
  if (place == it->second.queue.end()) return false;
  leave_queue(*it, place, now, granted);
  return true;
}

AcquireOutcome LockTable::decide_in_place(Locks::value_type& lock, std::deque<Waiter>::iterator place,
                                          const LockRequest& r, TimeMs now) {
  Entry& e = lock.second;
  AcquireOutcome out;
  out.had_place = true;
  if (place == e.queue.begin() && e.fits(r.weight)) {
    // Its turn came while it parked: handed over from the queue, in its place's order.
    e.last_granted_order = place->order;
    e.queue.erase(place);
    ContextLocks& c = contexts_[r.who];
    c.waiting_for = nullptr;
    out.kind = AcquireOutcome::Kind::kGranted;
    out.grant = grant(lock, c, r, now, true);
    // Those behind it that fit the room left were held up by the place, not by the lock.
    grant_waiters(lock, now, &out.others);
    note_changed(lock.first);
    return out;
  }
  if (r.give_up_at <= now) {
    out.kind = AcquireOutcome::Kind::kTimedOut;
    leave_queue(lock, place, now, &out.others);
    return out;
  }
  if (std::string cycle = find_deadlock(r, e); !cycle.empty()) {
    out.kind = AcquireOutcome::Kind::kDeadlock;
    out.message = std::move(cycle);
    leave_queue(lock, place, now, &out.others);
    return out;
  }
  // It waits where it stood: the placeholder becomes the request.
  out.kind = AcquireOutcome::Kind::kQueued;
  out.ahead = static_cast<size_t>(place - e.queue.begin());
  for (const Holder& h : e.holders) out.holders.push_back(h.who);
  place->request = r;
  place->placeholder = false;
  note_changed(lock.first);
  return out;
}

AcquireOutcome LockTable::acquire(const LockRequest& r) { return acquire(r, r.now); }

AcquireOutcome LockTable::acquire(const LockRequest& r, TimeMs now) {
  AcquireOutcome out;
  const auto it = entry(r.name);
  Entry& e = it->second;
  for (const Holder& h : e.holders) {
    if (h.who == r.who) {
      out.kind = AcquireOutcome::Kind::kReentered;
      out.grant.who = r.who;
      out.grant.owner = r.owner;
      out.grant.name = r.name;
      out.grant.weight = h.weight;
      out.grant.token = h.token;
      out.grant.requested_at = r.now;
      out.grant.granted_at = now;
      out.grant.expires_at = h.expires_at;
      return out;
    }
  }
  const auto place = place_of(*it, r.who);
  if (r.weight < 1 || r.weight > e.limit) {
    out.kind = AcquireOutcome::Kind::kTooHeavy;
    out.message = "weight " + std::to_string(r.weight) + " does not fit lock '" + r.name + "' (limit " +
                  std::to_string(e.limit) + ")";
    if (place != e.queue.end()) {
      out.had_place = true;
      leave_queue(*it, place, now, &out.others);  // the limit was lowered since its try
    } else {
      forget_if_idle(r.name);
    }
    return out;
  }
  if (place != e.queue.end()) return decide_in_place(*it, place, r, now);
  if (e.queue.empty() && e.fits(r.weight)) {
    out.kind = AcquireOutcome::Kind::kGranted;
    out.grant = grant(*it, contexts_[r.who], r, now, false);
    note_changed(r.name);
    return out;
  }
  // A request that would not wait (its one attempt, or its last, failed) closes no
  // cycle: it times out. Only one that would queue can be refused as a deadlock.
  if (r.give_up_at <= now) {
    out.kind = AcquireOutcome::Kind::kTimedOut;
    return out;
  }
  std::string cycle = find_deadlock(r, e);
  if (!cycle.empty()) {
    out.kind = AcquireOutcome::Kind::kDeadlock;
    out.message = std::move(cycle);
    return out;
  }
  out.kind = AcquireOutcome::Kind::kQueued;
  out.ahead = e.queue.size();
  for (const Holder& h : e.holders) out.holders.push_back(h.who);
  e.queue.push_back(Waiter{r, TimerHandle{}, next_order_++});
  contexts_[r.who].waiting_for = &it->first;
  note_changed(r.name);
  return out;
}

void LockTable::drop_holder(Locks::value_type& lock, std::vector<Holder>::iterator it) {
  const std::string& name = lock.first;
  Entry& e = lock.second;
  const uint64_t who = it->who;
  e.held -= it->weight;
  e.holders.erase(it);
  auto c = contexts_.find(who);
  if (c == contexts_.end()) return;
  auto& held = c->second.held;
  held.erase(std::find(held.begin(), held.end(), &name));
  forget_context_if_idle(c);
}

bool LockTable::release(uint64_t who, std::string_view name, TimeMs now, std::vector<LockGrant>* granted) {
  auto it = locks_.find(name);
  if (it == locks_.end()) return false;
  Entry& e = it->second;
  auto h = std::find_if(e.holders.begin(), e.holders.end(), [&](const Holder& x) { return x.who == who; });
  if (h == e.holders.end()) return false;
  drop_holder(*it, h);
  grant_waiters(*it, now, granted);
  forget_if_idle(name);
  return true;
}

bool LockTable::give_up(uint64_t who, std::string_view name, uint64_t wait_id, TimeMs now,
                        std::vector<LockGrant>* granted, LockRequest* request, TimerHandle* give_up_timer) {
  auto it = locks_.find(name);
  if (it == locks_.end()) return false;
  Entry& e = it->second;
  auto w = std::find_if(e.queue.begin(), e.queue.end(), [&](const Waiter& x) { return x.who() == who; });
  if (w == e.queue.end() || w->placeholder || w->request.wait_id != wait_id) return false;
  if (request) *request = w->request;
  if (give_up_timer) *give_up_timer = w->give_up_timer;
  leave_queue(*it, w, now, granted);
  return true;
}

bool LockTable::expire(uint64_t who, std::string_view name, int64_t token, TimeMs now,
                       std::vector<LockGrant>* granted) {
  auto it = locks_.find(name);
  if (it == locks_.end()) return false;
  Entry& e = it->second;
  auto h = std::find_if(e.holders.begin(), e.holders.end(),
                        [&](const Holder& x) { return x.who == who && x.token == token; });
  if (h == e.holders.end()) return false;
  drop_holder(*it, h);
  grant_waiters(*it, now, granted);
  forget_if_idle(name);
  return true;
}

void LockTable::release_all(uint64_t who, TimeMs now, std::vector<std::string>* released,
                            std::vector<TimerHandle>* timers, std::vector<LockGrant>* granted) {
  auto c = contexts_.find(who);
  if (c == contexts_.end()) return;
  if (const std::string* waiting_for = c->second.waiting_for) {
    const std::string name = *waiting_for;  // the entry may be forgotten below
    c->second.waiting_for = nullptr;
    auto l = locks_.find(name);
    Entry& e = l->second;
    auto q = std::find_if(e.queue.begin(), e.queue.end(), [&](const Waiter& x) { return x.who() == who; });
    if (q != e.queue.end()) {
      timers->push_back(q->give_up_timer);
      e.queue.erase(q);
    }
    grant_waiters(*l, now, granted);
    forget_if_idle(name);
  }
  // Copied: drop_holder edits the record, and erases it once nothing is left.
  std::vector<std::string> names;
  c = contexts_.find(who);
  if (c != contexts_.end()) {
    for (const std::string* name : c->second.held) names.push_back(*name);
    forget_context_if_idle(c);
  }
  for (const std::string& name : names) {
    auto l = locks_.find(name);
    Entry& e = l->second;
    auto it = std::find_if(e.holders.begin(), e.holders.end(), [&](const Holder& x) { return x.who == who; });
    if (it == e.holders.end()) continue;
    timers->push_back(it->lease_timer);
    drop_holder(*l, it);
    released->push_back(name);
    grant_waiters(*l, now, granted);
    forget_if_idle(name);
  }
}

bool LockTable::holds(uint64_t who, std::string_view name) const {
  auto it = locks_.find(name);
  if (it == locks_.end()) return false;
  const auto& hs = it->second.holders;
  return std::any_of(hs.begin(), hs.end(), [&](const Holder& h) { return h.who == who; });
}

void LockTable::set_lease_timer(uint64_t who, std::string_view name, TimerHandle timer) {
  auto it = locks_.find(name);
  if (it == locks_.end()) return;
  for (Holder& h : it->second.holders) {
    if (h.who == who) h.lease_timer = timer;
  }
}

TimerHandle LockTable::lease_timer(uint64_t who, std::string_view name) const {
  auto it = locks_.find(name);
  if (it == locks_.end()) return {};
  for (const Holder& h : it->second.holders) {
    if (h.who == who) return h.lease_timer;
  }
  return {};
}

void LockTable::set_give_up_timer(uint64_t who, std::string_view name, TimerHandle timer) {
  auto it = locks_.find(name);
  if (it == locks_.end()) return;
  // A context waits in one queue at most once, and is set its timer just after it joined
  // at the back: look from there, so a long queue costs nothing.
  auto& queue = it->second.queue;
  for (auto w = queue.rbegin(); w != queue.rend(); ++w) {
    if (w->who() == who) {
      w->give_up_timer = timer;
      return;
    }
  }
}

std::string LockTable::find_deadlock(const LockRequest& r, const Entry& target) const {
  last_deadlock_check_work_ = 0;
  // A requester that holds nothing cannot close a cycle: nobody waits for it (it is in no
  // queue yet, and only holders and those ahead in a queue are waited for), and no cycle
  // exists already (each would have been refused). The common case costs nothing.
  if (!holds_any(r.who)) return "";
  // Its place, when it has one, is near the back (see place_of).
  const bool placed =
      std::any_of(target.queue.rbegin(), target.queue.rend(), [&](const Waiter& w) { return w.who() == r.who; });
  // Suppose the requester waits, at the end of the target's queue (or where its placeholder
  // stands). Which contexts can still get what they wait for? One that waits for nothing
  // will release what it holds. A waiter can be granted once everyone queued ahead of it
  // can, and the holders that cannot proceed leave room for its weight. What cannot
  // proceed at the end of that is deadlocked; if the requester is among them, the request
  // is refused.
  //
  // Computed by propagation: a context found to proceed frees what it holds, which may let
  // the waiters of those locks proceed, in queue order. Each lock keeps how much of it is
  // held by contexts not (yet) known to proceed, and how far into its queue everyone
  // proceeds; each context is marked once and each lock's queue walked once, so the
  // cost is linear in the waiters and what they hold (counted in last_deadlock_check_work).
  //
  // Only the locks the requester waits for, directly or through their holders and
  // waiters, are evaluated: whether a context proceeds depends only on the holders of the
  // lock it waits for and those queued ahead of it, so whether the requester does depends
  // on nothing outside that closure. In a chain of contexts each holding one lock and
  // waiting for the next one's (hand over hand), a request costs the chain ahead of it,
  // not every waiter.
  std::unordered_set<uint64_t> proceeds;
  // Waits for something (so does the requester, supposedly): may be stuck.
  auto waits = [&](uint64_t who) { return who == r.who || waiting(who); };
  auto stuck_now = [&](uint64_t who) { return waits(who) && !proceeds.count(who); };
  struct Progress {
    int64_t stuck_weight = 0;  // held by contexts not known to proceed
    size_t next = 0;           // queue positions before it all proceed
  };
  std::unordered_map<const Entry*, Progress> progress;
  auto progress_of = [&](const Entry& e) -> Progress& {
    auto [it, fresh] = progress.try_emplace(&e);
    if (fresh) {
      // Counted as stuck if it waits: one found to proceed is taken off when it is freed.
      for (const Holder& h : e.holders) {
        ++last_deadlock_check_work_;
        if (waits(h.who)) it->second.stuck_weight += h.weight;
      }
    }
    return it->second;
  };
  std::vector<uint64_t> freed;  // contexts found to proceed, whose holdings are still to free
  auto evaluate = [&](const Entry& e) {
    Progress& p = progress_of(e);
    // The requester last, or where its placeholder stands (try_acquire).
    const size_t positions = e.queue.size() + (&e == &target && !placed ? 1 : 0);
    while (p.next < positions) {
      ++last_deadlock_check_work_;
      const bool requester = p.next == e.queue.size();
      const int64_t weight = requester ? r.weight : e.queue[p.next].weight();
      if (e.limit - p.stuck_weight < weight) break;
      const uint64_t who = requester ? r.who : e.queue[p.next].who();
      if (proceeds.insert(who).second) freed.push_back(who);
      ++p.next;
    }
  };
  std::unordered_set<const Entry*> reached_locks;
  std::unordered_set<uint64_t> reached{r.who};
  std::vector<const Entry*> closure;  // the locks waited for in the closure
  std::vector<uint64_t> todo{r.who};
  while (!todo.empty()) {
    const uint64_t who = todo.back();
    todo.pop_back();
    const ContextLocks* c = who == r.who ? nullptr : context_locks(who);
    const Entry* e = who == r.who ? &target : c && c->waiting_for ? &locks_.find(*c->waiting_for)->second : nullptr;
    if (!e || !reached_locks.insert(e).second) continue;
    closure.push_back(e);
    // Its holders, and its whole queue (those behind a waiter too: fewer to tell apart,
    // and evaluating more than needed changes nothing).
    for (const Holder& h : e->holders) {
      ++last_deadlock_check_work_;
      if (reached.insert(h.who).second) todo.push_back(h.who);
    }
    for (const Waiter& w : e->queue) {
      ++last_deadlock_check_work_;
      if (reached.insert(w.who()).second) todo.push_back(w.who());
    }
  }
  for (const Entry* e : closure) evaluate(*e);
  // Once the requester is known to proceed, nothing more is needed.
  while (!freed.empty() && !proceeds.count(r.who)) {
    const uint64_t who = freed.back();
    freed.pop_back();
    const ContextLocks* c = context_locks(who);
    if (!c) continue;
    for (const std::string* name : c->held) {
      const Entry& e = locks_.find(*name)->second;
      Progress& p = progress_of(e);
      for (const Holder& holder : e.holders) {
        ++last_deadlock_check_work_;
        if (holder.who == who) p.stuck_weight -= holder.weight;
      }
      evaluate(e);
    }
  }
  if (proceeds.count(r.who)) return "";
  return name_cycle(r, target, [&](uint64_t who) { return !stuck_now(who); });
}

std::string LockTable::name_cycle(const LockRequest& r, const Entry& target,
                                  const std::function<bool(uint64_t)>& can_proceed) const {
  // The shortest cycle through the requester: a breadth-first search over "waits for"
  // among the contexts that cannot proceed, from the requester back to it. A context waits
  // for the holders of the lock it waits for, then for those queued ahead of it.
  struct Edge {
    uint64_t from;
    std::string name;  // the lock `from` waits for
    bool behind;       // queued behind the next one (else: the next one holds it)
  };
  auto blockers = [&](uint64_t who, const Entry& e, const std::string& name, auto&& visit) {
    for (const Holder& h : e.holders) {
      if (!can_proceed(h.who) && visit(h.who, Edge{who, name, false})) return true;
    }
    for (const Waiter& w : e.queue) {
      if (w.who() == who) break;
      if (!can_proceed(w.who()) && visit(w.who(), Edge{who, name, true})) return true;
    }
    return false;
  };
  std::unordered_map<uint64_t, Edge> came_from;  // context -> the edge that reached it
  std::deque<uint64_t> frontier{r.who};
  std::optional<Edge> closing;
  while (!frontier.empty() && !closing) {
    const uint64_t who = frontier.front();
    frontier.pop_front();
    const bool is_requester = who == r.who;
    const ContextLocks* c = context_locks(who);
    if (!is_requester && !(c && c->waiting_for)) continue;
    const std::string& name = is_requester ? r.name : *c->waiting_for;
    const Entry& e = is_requester ? target : locks_.find(name)->second;
    blockers(who, e, name, [&](uint64_t next, const Edge& edge) {
      if (next == r.who) {
        closing = edge;
        return true;
      }
      if (came_from.try_emplace(next, edge).second) frontier.push_back(next);
      return false;
    });
  }
  if (!closing) return "deadlock: " + ctx_name(r.who) + " waits for lock '" + r.name + "'";
  // Walk back from the closing edge to the requester, then tell it forwards.
  std::vector<std::pair<Edge, uint64_t>> path{{*closing, r.who}};
  for (uint64_t at = closing->from; at != r.who;) {
    const Edge& e = came_from.at(at);
    path.emplace_back(e, at);
    at = e.from;
  }
  std::reverse(path.begin(), path.end());
  // A long cycle is named by its first waits and its last two, which close it.
  constexpr size_t kFirstNamed = 8, kLastNamed = 2;
  std::string text = "deadlock: " + ctx_name(r.who);
  for (size_t i = 0; i < path.size(); ++i) {
    if (i == kFirstNamed && path.size() > kFirstNamed + kLastNamed + 1) {
      const size_t skipped = path.size() - kFirstNamed - kLastNamed;
      text += ", which ... (" + std::to_string(skipped) + " more waits)";
      i += skipped - 1;
      continue;
    }
    const auto& [edge, to] = path[i];
    if (i > 0) text += ", which";
    text += (edge.behind ? " waits in the queue of lock '" : " waits for lock '") + edge.name + "' " +
            (edge.behind ? "behind " : "held by ") + ctx_name(to);
  }
  return text;
}

std::vector<LockState> LockTable::snapshot() const {
  std::vector<LockState> out;
  for (const auto& [name, e] : locks_) {
    if (e.holders.empty() && e.queue.empty()) continue;
    LockState s{name, e.limit, e.held, next_token_ - 1, {}, {}};
    for (const Holder& h : e.holders) s.holders.push_back({h.who, h.weight, h.token, h.acquired_at, h.expires_at});
    for (const Waiter& w : e.queue) {
      s.waiters.push_back({w.who(), w.weight(), w.request.now, w.request.give_up_at});
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::string LockTable::check_invariants() const {
  if (!violation_.empty()) return violation_;
  size_t queued = 0, held = 0;
  for (const auto& [name, e] : locks_) {
    int64_t sum = 0;
    for (const Holder& h : e.holders) {
      sum += h.weight;
      const ContextLocks* c = context_locks(h.who);
      if (!c || std::find(c->held.begin(), c->held.end(), &name) == c->held.end()) {
        return ctx_name(h.who) + " holds lock '" + name + "' but is not indexed";
      }
      ++held;
      for (const Waiter& w : e.queue) {
        if (w.who() == h.who) return ctx_name(h.who) + " both holds and waits for lock '" + name + "'";
      }
    }
    if (sum != e.held) return "lock '" + name + "' counts " + std::to_string(e.held) + " held, holders sum to " + std::to_string(sum);
    if (e.held > e.limit) return "lock '" + name + "' holds " + std::to_string(e.held) + " over its limit " + std::to_string(e.limit);
    if (!e.queue.empty() && !e.queue.front().placeholder && e.fits(e.queue.front().weight())) {
      return "lock '" + name + "' has a waiter that fits but was not granted";
    }
    for (const Waiter& w : e.queue) {
      const ContextLocks* c = context_locks(w.who());
      if (!c || c->waiting_for != &name) return ctx_name(w.who()) + " is queued but not indexed";
      ++queued;
    }
  }
  size_t indexed_waits = 0, indexed_holds = 0;
  for (const auto& [who, c] : contexts_) {
    if (c.idle()) return ctx_name(who) + " is indexed but neither holds nor waits";
    indexed_waits += c.waiting_for ? 1 : 0;
    indexed_holds += c.held.size();
  }
  if (queued != indexed_waits) return "the index of waiters does not match the queues";
  if (held != indexed_holds) return "the index of holders does not match the holders";
  return "";
}

}  // namespace flowrt
