// EngineCore, the endings: every context ends through finish_context (its locks released,
// its record final, its end journaled and told to watchers), and the thread that ran it
// then lets go of its execution state (let_go_of_finished). The ends that come from outside
// its steps: a slice that threw (end_after_exception), a custom action the watchdog gave up
// on (abandon), a cancel, and shutdown, which cancels every context.
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "plans/time.h"
#include "runtime/engine_core.h"
#include "runtime/engine_log.h"
#include "runtime/stored_context.h"

namespace flowrt {

void EngineCore::finish_context(Context& ctx, ContextStatus status, Value error) {
  // Every lock released, every queue left, before the context counts as ended.
  dispatcher.context_ended(ctx);
  ctx.finish(status, clock.now(), std::move(error), ctx.state ? ctx.state->run_ms : 0);
  if (options.measure_latency) ctx.ended_ns.store(steady_ns(), std::memory_order_release);
  if (journal) {
    // The final record is built here, on the thread that ran the context, not on the
    // journal's one writer thread, which is the durable store's limit.
    JournalEntry ended;
    ended.changes.push_back(record_update(ctx, props().record_value_limit));
    ended.ended.push_back(ctx.shared_from_this());
    journal->append(std::move(ended));
  } else if (options.measure_latency) {
    sample_latency(ctx);  // its live form (which has the times) goes when it is frozen
  }
  contexts.on_finished(ctx);
  end_watch->ended(ctx.id.as_string());
  // With no execution state left (one that never ran), it is frozen now; otherwise by the
  // thread that lets go of that state (let_go_of_finished), so that the values its record
  // shares with the state are written in place, not kept by reference.
  if (!journal && !ctx.state) contexts.freeze(ctx, FrozenContext::freeze(ctx));
}

void EngineCore::let_go_of_finished(Context& ctx) {
  // Let go of the run-time state; the record keeps the plan (its steps point into it). A
  // context that had none was frozen when it finished (finish_context): once only.
  if (!ctx.state) return;
  ctx.state.reset();
  if (journal) return;
  try {
    contexts.freeze(ctx, FrozenContext::freeze(ctx));
  } catch (const std::bad_alloc&) {
    // No memory for its compact form: it is kept in its live form, read as before.
    engine_log().error("{}: its record is kept unfrozen: no memory to freeze it", ctx.id.as_string());
  }
}

void EngineCore::sample_latency(const Context& ctx) {
  const int64_t end = ctx.ended_ns.load(std::memory_order_acquire);
  if (end <= 0 || ctx.committed_ns <= 0) return;
  released_latencies.add(end - ctx.committed_ns);
  if (ctx.taken_ns > 0) released_waits.add(ctx.taken_ns - ctx.committed_ns);
}

void EngineCore::end_after_exception(Context& ctx, std::string_view what) {
  engine_log().error("{}: internal error: {}", ctx.id.as_string(), what);
  if (ctx.finished()) return;
  if (ctx.state && ctx.state->parked) {
    // It failed while parking: its wait is dropped and no longer counted.
    clear_wait(ctx);
    waiting_.fetch_sub(1, std::memory_order_acq_rel);
  }
  const TimeMs t = clock.now();
  try {
    const Value message(std::string_view("internal error: " + std::string(what) + "; the context was ended"));
    ctx.end_open_steps(t, message);
    finish_context(ctx, ContextStatus::kError, Value::object({{"message", message}, {"step", Value()}}));
  } catch (const std::bad_alloc&) {
    // Out of memory, most likely because of this context's own record: its steps and logs
    // go, and it is ended with a record that says so. (A failure past this is the worker's
    // last resort, worker_pool.cpp, and its work is still counted done: EngineCore::run.)
    if (ctx.finished()) throw;
    ctx.drop_steps_and_logs();
    const Value message(std::string_view("internal error: " + std::string(what) +
                                         "; the context was ended, and its steps and logs dropped to free memory"));
    finish_context(ctx, ContextStatus::kError, Value::object({{"message", message}, {"step", Value()}}));
  }
}

void EngineCore::abandon(Watchdog::Call& call, Watchdog::Reason why) {
  Context& ctx = *call.context;
  std::string message = "action '" + call.action + "' did not return ";
  switch (why) {
    case Watchdog::Reason::kQuota: message += "within max_run_time (" + format_duration(props().max_run_time) + ")"; break;
    case Watchdog::Reason::kCancelled: message += "within 1s of its context being cancelled"; break;
    case Watchdog::Reason::kStopping: message += "within 1s of the engine stopping"; break;
  }
  message += "; the engine gave up on it and replaced its worker thread";
  engine_log().warn("{}: {}", ctx.id.as_string(), message);
  const TimeMs t = clock.now();
  const Value reason(std::string_view{message});
  ctx.end_step(call.record, StepStatus::kError, t, Value(), reason);
  for (int64_t record : call.open_records) ctx.end_step(record, StepStatus::kError, t, Value(), reason);
  finish_context(ctx, why == Watchdog::Reason::kQuota ? ContextStatus::kError : ContextStatus::kCancelled,
                 Value::object({{"message", reason}, {"step", call.path}}));
  // Retired (and counted as abandoned) before the work is given back, so that whoever
  // sees the engine idle also sees the stuck thread counted.
  workers.retire(call.worker);
  work_done();  // the stuck worker never will
}

Status EngineCore::cancel(std::string_view context_id) {
  const KeptContext kept = contexts.find(context_id);
  if (!kept) return Error{"no context '" + std::string(context_id) + "'"};
  const std::shared_ptr<Context>& ctx = kept.live();
  if (!ctx) return Status::ok();  // it ended: nothing to cancel
  if (ctx->request_cancel()) make_ready(ctx.get());
  watchdog.note_cancel(ctx.get());  // an action that ignores it gets a grace period, then is given up on
  return Status::ok();
}

size_t EngineCore::cancel_unfinished() {
  // Mark every context first, then wake the parked ones: a context woken by another's
  // release (a lock handed on) must find itself cancelled too, not run on.
  std::vector<std::shared_ptr<Context>> ending = contexts.unfinished();
  for (const std::shared_ptr<Context>& ctx : ending) ctx->set_cancel_flag();
  if (ending.empty()) return 0;
  for (const std::shared_ptr<Context>& ctx : ending) {
    if (ctx->request_cancel()) make_ready(ctx.get());
  }
  watchdog.note_cancel(nullptr);
  return ending.size();
}

size_t EngineCore::shutdown() {
  request_stop();
  shutting_down_.store(true, std::memory_order_release);  // starts from now on are cancelled at birth
  // A custom action or an on_context_end callback: the contexts are cancelled, but waiting
  // for them to end would wait for the caller's own (and a settle elsewhere may hold the
  // drive lock while it waits for this thread).
  if (WorkerPool::on_worker_thread()) return cancel_unfinished();
  MutexLock drive(drive_mu_);
  size_t cancelled = 0;
  // A context running now can still start others (its writes) until it ends: cancel and
  // wait again until nothing unfinished is left.
  while (const size_t now_cancelled = cancel_unfinished()) {
    cancelled += now_cancelled;
    wait_idle();
  }
  engine_log().info("shut down: {} contexts cancelled", cancelled);
  return cancelled;
}

}  // namespace flowrt
