// Dispatcher, the lock half: lock and unlock requests, their decisions on the virtual and
// the real clock, grants, give-ups and lease expiries, all under the commit lock
// (Dispatcher::mu_) like every other change of the engine's shared state.
#include <algorithm>
#include <optional>
#include <initializer_list>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "runtime/dispatcher.h"
#include "runtime/engine_core.h"
#include "runtime/perturb.h"
#include "runtime/text.h"

namespace flowrt {

namespace {

Value lock_outputs(std::string_view result, std::string_view state, const Value& token, int64_t attempts,
                   int64_t waited_ms) {
  static const Value kShape = intern_shape({"result", "state", "token", "attempts", "waited_ms"});
  return Value::object(kShape, {Value(result), Value(state), token, Value(static_cast<long long>(attempts)),
                                Value(static_cast<long long>(waited_ms))});
}

// "lock '<name>': <what>", a lock's log line.
Value lock_line(std::string_view name, std::initializer_list<std::string_view> what) {
  std::string text = str_cat({"lock '", name, "': "});  // in the small-string buffer for short names
  str_append(text, what);
  return Value(std::string_view(text));
}

// Attempts a poller would have made to see the grant: one at once, then one every `delay`.
int64_t attempts_for(DurationMs waited, DurationMs delay, int64_t max_attempts) {
  if (waited <= 0 || delay <= 0) return 1;
  return std::min<int64_t>(max_attempts, 1 + (waited + delay - 1) / delay);
}

}  // namespace

Status Dispatcher::check_holding(Origin origin, const Value& while_holding) {
  if (while_holding.is_null()) return Status::ok();
  if (!while_holding.is_string() || while_holding.as_string().empty()) {
    return Error{"input 'while_holding' must be a lock name"};
  }
  if (origin.context && locks_.holds(origin.context->seq, while_holding.as_string())) return Status::ok();
  return Error{"lock_lost: this context does not hold lock '" + std::string(while_holding.as_string()) +
               "'; nothing was written"};
}

void Dispatcher::set_lock_limit(std::string_view name, int64_t limit) {
  SpinMutexLock lock(mu_);
  locks_.set_limit(name, limit);
}

void Dispatcher::request_lock(const std::shared_ptr<Context>& ctx, LockRequest request) {
  ctx->used_locks.store(true, std::memory_order_release);
  SpinMutexLock lock(mu_);
  if (core_.clock.is_virtual()) {
    pending_.push_back(PendingLock{ctx, std::move(request)});
    pending_count_.fetch_add(1, std::memory_order_acq_rel);
    return;
  }
  // request.now is when the step asked (WaitRequest::requested_at), also for a request
  // resumed after a restart: decide_lock grants it from now, and counts its wait from then.
  decide_lock(ctx, request);
  locks_changed(nullptr);
}

size_t Dispatcher::resolve_pending_locks() {
  SpinMutexLock lock(mu_);
  std::vector<PendingLock> pending = std::move(pending_);
  pending_.clear();
  std::stable_sort(pending.begin(), pending.end(), [](const PendingLock& a, const PendingLock& b) {
    return a.request.now != b.request.now ? a.request.now < b.request.now : a.request.who < b.request.who;
  });
  for (const PendingLock& p : pending) decide_lock(p.context, p.request);
  locks_changed(nullptr);
  // Only now, after the decisions woke their contexts (which count as work), do these
  // requests stop counting as pending: settle never sees a moment with neither.
  pending_count_.fetch_sub(pending.size(), std::memory_order_acq_rel);
  return pending.size();
}

void Dispatcher::lock_failed(const std::shared_ptr<Context>& ctx, const LockRequest& r, std::string_view state,
                             std::string message, int64_t attempts) {
  const TimeMs now = core_.clock.now();
  WakeUp w;
  w.kind = WakeUp::Kind::kLock;
  w.at = now;
  w.outputs = lock_outputs("failure", state, Value(), attempts, now - r.now);
  w.error = std::move(message);
  ctx->add_log(LogLevel::kWarn, r.step, now, Value(std::string_view(w.error)));
  wake_locked(ctx, r.wait_id, std::move(w));
}

void Dispatcher::decide_lock(const std::shared_ptr<Context>& ctx, const LockRequest& r) {
  // Decided now: a request resumed after a restart keeps its request time (its place in
  // the queue, its wait) but is granted, and its lease counted, from now.
  AcquireOutcome o = locks_.acquire(r, std::max(r.now, core_.clock.now()));
  // Its place, given up, held them up; granted, it held up those behind it that fit too,
  // which are woken after it, in queue order (below).
  if (o.kind != AcquireOutcome::Kind::kGranted) apply_grants(o.others);
  // A place taken by the step's try (try_lock) counts in locks_in_use from then on: it
  // goes on counting as a queued request, and stops counting with a refusal.
  if (o.had_place && o.kind != AcquireOutcome::Kind::kGranted && o.kind != AcquireOutcome::Kind::kQueued) {
    ctx->locks_in_use.fetch_sub(1, std::memory_order_release);
  }
  switch (o.kind) {
    case AcquireOutcome::Kind::kGranted:
    case AcquireOutcome::Kind::kReentered: {
      std::vector<LockGrant> grants{o.grant};
      if (o.kind == AcquireOutcome::Kind::kReentered) {
        // Already held: granted at once with the token it holds; the lease is unchanged.
        WakeUp w;
        w.kind = WakeUp::Kind::kLock;
        w.at = r.now;
        w.outputs = lock_outputs("success", "finished", Value(static_cast<long long>(o.grant.token)), 1, 0);
        ctx->add_log(LogLevel::kInfo, r.step, r.now,
                     lock_line(r.name, {"already held (token ", std::to_string(o.grant.token), ")"}));
        wake_locked(ctx, r.wait_id, std::move(w));
        return;
      }
      grants.insert(grants.end(), std::make_move_iterator(o.others.begin()), std::make_move_iterator(o.others.end()));
      apply_grants(grants);
      return;
    }
    case AcquireOutcome::Kind::kQueued: {
      std::string held_by;
      for (uint64_t who : o.holders) {
        if (!held_by.empty()) held_by += ", ";
        held_by += "ctx-";
        held_by += std::to_string(who);
      }
      // Held by nobody when only a place ahead of it (a try whose context is parking) holds
      // it up.
      const std::string ahead = std::to_string(o.ahead) + " ahead in the queue";
      ctx->add_log(LogLevel::kInfo, r.step, r.now,
                   held_by.empty() ? lock_line(r.name, {"waiting; ", ahead})
                                   : lock_line(r.name, {"waiting; held by ", held_by, ", ", ahead}));
      const TimerHandle t = lock_deadlines_.add(
          r.give_up_at, LockDeadline{LockDeadline::Kind::kGiveUp, ctx, r.name, static_cast<int64_t>(r.wait_id)});
      locks_.set_give_up_timer(r.who, r.name, t);
      if (!o.had_place) ctx->locks_in_use.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    case AcquireOutcome::Kind::kTimedOut:
      lock_failed(ctx, r, "timeout",
                  "lock '" + r.name + "' not granted: timed out after " + std::to_string(r.max_attempts) +
                      (r.max_attempts == 1 ? " attempt" : " attempts"),
                  r.max_attempts);
      return;
    case AcquireOutcome::Kind::kDeadlock:
      lock_failed(ctx, r, "deadlock", "lock '" + r.name + "' refused: " + o.message, 1);
      return;
    case AcquireOutcome::Kind::kTooHeavy:
      lock_failed(ctx, r, "error", "lock '" + r.name + "' refused: " + o.message, 1);
      return;
  }
}

void Dispatcher::verify_locks(const Context* ended) {
  if (!core_.options.check_invariants || !violation_.empty()) return;
  violation_ = locks_.check_invariants();
  if (violation_.empty() && ended && (locks_.holds_any(ended->seq) || locks_.waiting(ended->seq))) {
    violation_ = std::string(ended->id.as_string()) + " ended but still holds or waits for a lock";
  }
}

std::string Dispatcher::lock_violation() {
  SpinMutexLock lock(mu_);
  return violation_;
}

Value Dispatcher::record_grant(Context& ctx, const LockGrant& g) {
  lock_grants_.fetch_add(1, std::memory_order_relaxed);
  if (g.was_queued) {
    lock_handoffs_.fetch_add(1, std::memory_order_relaxed);  // counted in locks_in_use when it queued
  } else {
    ctx.locks_in_use.fetch_add(1, std::memory_order_relaxed);
  }
  lock_deadlines_.cancel(g.give_up_timer);
  const TimerHandle lease =
      lock_deadlines_.add(g.expires_at, LockDeadline{LockDeadline::Kind::kLease, ctx.shared_from_this(), g.name, g.token});
  locks_.set_lease_timer(g.who, g.name, lease);
  const DurationMs waited = g.granted_at - g.requested_at;
  const std::string token_text = std::to_string(g.token);
  ctx.add_log(LogLevel::kInfo, g.step, g.granted_at,
              g.was_queued ? lock_line(g.name, {"granted, token ", token_text, ", after waiting ", std::to_string(waited), "ms"})
                           : lock_line(g.name, {"granted, token ", token_text}));
  return lock_outputs("success", "finished", Value(static_cast<long long>(g.token)),
                      attempts_for(waited, g.delay, g.max_attempts), waited);
}

void Dispatcher::apply_grants(std::vector<LockGrant>& grants) {
  for (LockGrant& g : grants) {
    auto* ctx = static_cast<Context*>(g.owner);
    WakeUp w;
    w.kind = WakeUp::Kind::kLock;
    w.at = g.granted_at;
    w.outputs = record_grant(*ctx, g);
    wake_locked(ctx->shared_from_this(), g.wait_id, std::move(w));
  }
}

Value Dispatcher::try_lock(Context& ctx, LockRequest request, bool* took_place) {
  ctx.used_locks.store(true, std::memory_order_release);
  if (core_.clock.is_virtual()) return Value();  // decided at the next quiescent moment
  SpinMutexLock lock(mu_);
  request.now = core_.clock.now();
  AcquireOutcome o;
  if (!locks_.try_acquire(request, &o)) {
    if (o.kind == AcquireOutcome::Kind::kQueued) {
      // Its place in the queue, until the park asks again (decide_lock) or the step does
      // not park for it (drop_lock_place); counted, so that its context's end looks. The
      // table's change goes to the journal with the park's decision, microseconds later:
      // one entry for both, and a restart does not ask for a place anyway.
      ctx.locks_in_use.fetch_add(1, std::memory_order_relaxed);
      *took_place = true;
    }
    return Value();
  }
  if (o.kind == AcquireOutcome::Kind::kReentered) {
    ctx.add_log(LogLevel::kInfo, request.step, request.now,
                lock_line(request.name, {"already held (token ", std::to_string(o.grant.token), ")"}));
    return lock_outputs("success", "finished", Value(static_cast<long long>(o.grant.token)), 1, 0);
  }
  Value outputs = record_grant(ctx, o.grant);
  locks_changed(nullptr);
  return outputs;
}

void Dispatcher::drop_lock_place(Context& ctx, std::string_view name) {
  SpinMutexLock lock(mu_);
  std::vector<LockGrant> grants;
  if (!locks_.drop_place(ctx.seq, name, core_.clock.now(), &grants)) return;
  ctx.locks_in_use.fetch_sub(1, std::memory_order_release);
  apply_grants(grants);
  locks_changed(nullptr);
}

void Dispatcher::arm_lock_timer() {
  const TimeMs want = lock_deadlines_.earliest().value_or(kNoLockTimer);
  if (want == lock_timer_at_) return;  // a hand-off: one lease for another, same millisecond
  core_.timers.cancel(lock_timer_);
  lock_timer_ = TimerHandle{};
  lock_timer_at_ = want;
  if (want == kNoLockTimer) return;
  const uint64_t generation = ++lock_timer_generation_;
  lock_timer_ = core_.timers.add(want, true, [this, generation] { fire_lock_deadlines(generation); });
}

void Dispatcher::locks_changed(const Context* ended) {
  arm_lock_timer();
  verify_locks(ended);
  journal_locked();
}

void Dispatcher::fire_lock_deadlines(uint64_t generation) {
  SpinMutexLock lock(mu_);
  // A timer replaced while it was firing still ends what is due, and leaves the armed one.
  if (generation == lock_timer_generation_) {
    lock_timer_ = TimerHandle{};
    lock_timer_at_ = kNoLockTimer;
  }
  for (const LockDeadline& d : lock_deadlines_.take_due(core_.clock.now())) {
    if (d.kind == LockDeadline::Kind::kGiveUp) {
      give_up_lock(d);
    } else {
      expire_lease(d);
    }
  }
  locks_changed(nullptr);
}

void Dispatcher::give_up_lock(const LockDeadline& d) {
  std::vector<LockGrant> grants;
  LockRequest r;
  const TimeMs now = core_.clock.now();
  if (!locks_.give_up(d.context->seq, d.name, static_cast<uint64_t>(d.id), now, &grants, &r)) return;
  d.context->locks_in_use.fetch_sub(1, std::memory_order_release);
  lock_failed(d.context, r, "timeout",
              "lock '" + d.name + "' not granted: gave up after " + std::to_string(r.max_attempts) + " attempts (" +
                  std::to_string(now - r.now) + "ms)",
              r.max_attempts);
  apply_grants(grants);
}

void Dispatcher::expire_lease(const LockDeadline& d) {
  std::vector<LockGrant> grants;
  const TimeMs now = core_.clock.now();
  if (!locks_.expire(d.context->seq, d.name, d.id, now, &grants)) return;
  d.context->locks_in_use.fetch_sub(1, std::memory_order_release);
  d.context->add_log(LogLevel::kWarn, Value(), now,
                     Value(std::string_view(str_cat({"lock '", d.name, "' (token ", std::to_string(d.id),
                                                     "): held for its max_duration; released as if unlocked"}))));
  apply_grants(grants);
}

bool Dispatcher::release_lock(Context& ctx, std::string_view name) {
  perturb(PerturbPoint::kBeforeLockRelease);
  SpinMutexLock lock(mu_);
  lock_deadlines_.cancel(locks_.lease_timer(ctx.seq, name));
  std::vector<LockGrant> grants;
  if (!locks_.release(ctx.seq, name, core_.clock.now(), &grants)) return false;
  ctx.locks_in_use.fetch_sub(1, std::memory_order_release);
  apply_grants(grants);
  locks_changed(nullptr);
  return true;
}

bool Dispatcher::restore_holder(const std::shared_ptr<Context>& ctx, std::string_view name, int64_t weight,
                                int64_t token, TimeMs acquired_at, TimeMs expires_at) {
  ctx->used_locks.store(true, std::memory_order_release);
  SpinMutexLock lock(mu_);
  if (!locks_.restore_holder(ctx->seq, ctx.get(), name, weight, token, acquired_at, expires_at)) return false;
  ctx->locks_in_use.fetch_add(1, std::memory_order_relaxed);
  const TimerHandle lease =
      lock_deadlines_.add(expires_at, LockDeadline{LockDeadline::Kind::kLease, ctx, std::string(name), token});
  locks_.set_lease_timer(ctx->seq, name, lease);
  locks_changed(nullptr);
  return true;
}

WakeUp Dispatcher::restored_grant(Context& ctx, std::string_view name) {
  WakeUp w;
  w.kind = WakeUp::Kind::kLock;
  w.at = core_.clock.now();
  SpinMutexLock lock(mu_);
  std::optional<LockState> state = locks_.state(name);
  if (!state) return w;
  for (const LockHolderState& h : state->holders) {
    if (h.who != ctx.seq) continue;
    const WaitRequest& r = ctx.exec().wait;
    const DurationMs waited = std::max<DurationMs>(0, h.acquired_at - r.requested_at);
    const std::string token_text = std::to_string(h.token);
    ctx.add_log(LogLevel::kInfo, ctx.exec().parked_path, h.acquired_at,
                waited > 0 ? lock_line(name, {"granted, token ", token_text, ", after waiting ", std::to_string(waited), "ms"})
                           : lock_line(name, {"granted, token ", token_text}));
    w.at = h.acquired_at;
    w.outputs = lock_outputs("success", "finished", Value(static_cast<long long>(h.token)),
                             attempts_for(waited, r.delay, r.max_attempts), waited);
    return w;
  }
  return w;
}

bool Dispatcher::holds_lock(const Context& ctx, std::string_view name) {
  SpinMutexLock lock(mu_);
  return locks_.holds(ctx.seq, name);
}

std::vector<LockState> Dispatcher::lock_states() {
  SpinMutexLock lock(mu_);
  return locks_.snapshot();
}

std::string Dispatcher::check_lock_invariants() {
  SpinMutexLock lock(mu_);
  return locks_.check_invariants();
}

}  // namespace flowrt
