#include "runtime/liveness.h"

#include "plans/eval.h"
#include "plans/time.h"
#include "runtime/context_record.h"

namespace flowrt {
namespace {

// A timer the wait counts on: still queued and due after now (a queued timer due at or
// before now would have fired in the settle or advance that just ended).
std::string timer_problem(EngineCore& core, const TimerHandle& timer, const char* of) {
  if (!timer.valid()) return std::string("its ") + of + " has no timer";
  if (!core.timers.contains(timer)) return std::string("its ") + of + " timer is not in the timer queue";
  if (timer.deadline <= core.clock.now()) {
    return std::string("its ") + of + " timer was due at " + format_time(timer.deadline) + " but has not fired (now " +
           format_time(core.clock.now()) + ")";
  }
  return "";
}

void describe_lock(EngineCore& core, const Context& ctx, const std::vector<LockState>& locks, ContextWait* w) {
  const std::string name(ctx.state->wait.lock_name.as_string());
  w->what = "lock '" + name + "'";
  for (const LockState& l : locks) {
    if (l.name != name) continue;
    for (const LockWaiterState& q : l.waiters) {
      if (q.who != ctx.seq) continue;
      if (q.give_up_at >= 0 && q.give_up_at <= core.clock.now()) {
        w->problem = "its give-up time " + format_time(q.give_up_at) + " has passed (now " +
                     format_time(core.clock.now()) + ")";
      }
      return;
    }
  }
  w->problem = "it is in no queue of lock '" + name + "'";
}

// Whether `record` meets the wait's condition as it is now: compared with itself as the
// previous version, so that a condition on a change never holds.
bool meets(const WaitRequest& req, const Value& record) {
  if (!req.condition) return false;
  Scope scope;
  scope.record = &record;
  scope.previous = &record;
  Result<bool> r = evaluate(*req.condition, scope);
  return r.is_ok() && *r;
}

void describe_record(EngineCore& core, Context& ctx, ContextWait* w) {
  const WaitRequest& req = ctx.state->wait;
  const std::string table(req.table.as_string());
  const std::string sys_id(req.sys_id.as_string());
  w->what = "record " + table + "/" + sys_id;
  if (core.dispatcher.get(table, sys_id).is_null()) {
    w->problem = "the record does not exist";
  } else if (!core.dispatcher.has_record_waiter(table, sys_id, ctx)) {
    w->problem = "it is not among the record's waiters";
  } else if (meets(req, core.dispatcher.get(table, sys_id))) {
    w->problem = "the record meets its condition, yet it was not woken (a lost wake-up): " +
                 core.dispatcher.get(table, sys_id).to_json();
  } else if (req.deadline >= 0) {
    w->what += " (timeout at " + format_time(req.deadline) + ")";
    w->problem = timer_problem(core, ctx.state->timer, "timeout's");
  }
}

}  // namespace

std::string_view wait_on_name(ContextWait::On on) {
  switch (on) {
    case ContextWait::On::kRun: return "run";
    case ContextWait::On::kNothing: return "nothing";
    case ContextWait::On::kTimer: return "timer";
    case ContextWait::On::kRecord: return "record";
    case ContextWait::On::kLock: return "lock";
  }
  return "?";
}

std::vector<ContextWait> context_waits(EngineCore& core) {
  std::vector<ContextWait> out;
  const std::vector<LockState> locks = core.dispatcher.lock_states();
  for (const std::shared_ptr<Context>& ctx : core.contexts.unfinished()) {
    ContextWait w;
    w.context = std::string(ctx->id.as_string());
    w.status = std::string(status_name(ctx->status()));
    if (ctx->phase() != Context::Phase::kParked) {
      out.push_back(std::move(w));
      continue;
    }
    const WaitRequest::Kind kind = ctx->state ? ctx->state->wait.kind : WaitRequest::Kind::kNone;
    switch (kind) {
      case WaitRequest::Kind::kNone:
        w.on = ContextWait::On::kNothing;
        w.what = "nothing";
        w.problem = ctx->state ? "it is parked without a wait request" : "it is parked without an execution state";
        break;
      case WaitRequest::Kind::kTimer:
        w.on = ContextWait::On::kTimer;
        w.what = "timer due at " + format_time(ctx->state->wait.deadline);
        w.problem = timer_problem(core, ctx->state->timer, "wait's");
        break;
      case WaitRequest::Kind::kRecord:
        w.on = ContextWait::On::kRecord;
        describe_record(core, *ctx, &w);
        break;
      case WaitRequest::Kind::kLock:
        w.on = ContextWait::On::kLock;
        describe_lock(core, *ctx, locks, &w);
        break;
    }
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace flowrt
