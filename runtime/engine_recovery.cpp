// EngineCore, the recovery half: what an engine does with the state it found in its store
// (docs/DURABILITY.md, "Recovery"): flows active again, contexts that were running or
// waiting resumed from their checkpoints (or ended in error, saying why, when they cannot
// be), their locks held and asked for again in their order, queued trigger events started.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "plans/time.h"
#include "runtime/checkpoint.h"
#include "runtime/engine_core.h"
#include "runtime/engine_log.h"
#include "runtime/flow_slot.h"
#include "runtime/interpreter.h"
#include "runtime/ordered_read_ahead.h"
#include "runtime/perturb.h"
#include "runtime/record_json.h"
#include "runtime/stored_context.h"

namespace flowrt {

namespace {

// A stored record ended in error: its status, end, error, open steps and a log line.
Value ended_record(const Value& record, TimeMs now, const Value& error) {
  const Value when(std::string_view(format_time(now)));
  std::vector<Member> out;
  for (const auto& m : record.members()) {
    const std::string_view key = m.key.as_string();
    if (key == "status") {
      out.push_back(Member{m.key, Value("error")});
    } else if (key == "ended_at") {
      out.push_back(Member{m.key, when});
    } else if (key == "error") {
      out.push_back(Member{m.key, error});
    } else if (key == "steps") {
      std::vector<Value> steps;
      for (const Value& step : m.value.items()) {
        const Value& st = step["status"];
        if (st != Value("in_progress") && st != Value("waiting")) {
          steps.push_back(step);
          continue;
        }
        std::vector<Member> fields;
        for (const auto& f : step.members()) {
          const std::string_view k = f.key.as_string();
          if (k == "status") fields.push_back(Member{f.key, Value("error")});
          else if (k == "ended_at") fields.push_back(Member{f.key, when});
          else fields.push_back(Member{f.key, f.value});
        }
        steps.push_back(Value::object(std::move(fields)));
      }
      out.push_back(Member{m.key, Value::array(std::move(steps))});
    } else if (key == "logs") {
      std::vector<Value> logs(m.value.items().begin(), m.value.items().end());
      logs.push_back(Value::object(
          {{"time", when}, {"level", Value("error")}, {"step", Value()}, {"message", error["message"]}}));
      out.push_back(Member{m.key, Value::array(std::move(logs))});
    } else {
      out.push_back(Member{m.key, m.value});
    }
  }
  return Value::object(std::move(out));
}

}  // namespace

void EngineCore::end_stored_context(const StoredContext& c, const std::string& reason, TimeMs now,
                                    JournalEntry* entry) {
  const Value error = Value::object({{"message", Value(std::string_view(reason))}, {"step", Value()}});
  Value record = c.record.value();
  if (record.is_object()) {
    record = ended_record(record, now, error);
  } else {
    // Never started, or no snapshot was written: a record from what the row says.
    Result<TriggerData> trigger = trigger_from_stored(c.trigger);
    std::unique_ptr<const Cause> cause = cause_from_stored(c.cause);
    RecordFields f;
    f.seq = c.seq;
    f.id = Value(std::string_view(c.id));
    f.flow = Value(std::string_view(c.flow));
    f.status = ContextStatus::kError;
    f.trigger = trigger ? &*trigger : nullptr;
    f.cause = cause.get();
    f.started = c.started;
    f.ended = now;
    f.error = error;
    record = ended_record(record_to_value(f), now, error);
  }
  entry->changes.push_back(ContextUpdate{c.seq, "error", -1, now, record, Value()});
  entry->archived.push_back(c.seq);  // read from the store once this entry is durable
  archive.add(c.seq, c.flow, std::move(record));
}

namespace {

Value text(const std::string& s) { return Value(std::string_view(s)); }

Value failure(const StoredContext& c, const std::string& reason) {
  return Value::object({{"context", text(c.id)}, {"flow", text(c.flow)}, {"was", text(c.status)}, {"reason", text(reason)}});
}

// The seq of "ctx-N"; 0 when it is not one.
uint64_t seq_of(const Value& id) {
  return context_seq_of(id.is_string() ? id.as_string() : std::string_view()).value_or(0);
}

TimeMs time_of(const Value& v) {
  if (v.is_int()) return v.as_int();
  Result<TimeMs> t = parse_time(v.is_string() ? v.as_string() : std::string_view());
  return t ? *t : 0;
}

}  // namespace

std::shared_ptr<Context> EngineCore::context_from_store(const StoredContext& c, std::string* reason) {
  FlowSlot* slot = flows.slot(c.flow);
  if (!slot) {
    *reason = "its flow '" + c.flow + "' is no longer defined";
    return nullptr;
  }
  Result<TriggerData> trigger = trigger_from_stored(c.trigger);
  if (!trigger) {
    *reason = "its trigger event cannot be read: " + trigger.message();
    return nullptr;
  }
  if (trigger->record.is_object() && trigger->table.is_string() && trigger->sys_id.is_string()) {
    // Most often the record is as it triggered (a request waiting to be decided): one copy,
    // the table's, as before the restart.
    Value current = dispatcher.get(trigger->table.as_string(), trigger->sys_id.as_string());
    if (current.is_object() && current == trigger->record) trigger->record = std::move(current);
  }
  auto ctx = std::make_shared<Context>(slot, std::move(trigger).value(), c.inputs);
  ctx->test_definition = stored_test_definition(c.trigger);
  if (c.checkpoint.is_null()) restore_test_run(*ctx);
  ctx->publish(c.seq, c.commit_seq, cause_from_stored(c.cause));
  if (c.run_key.is_string() && ctx->trigger.table.is_string() && ctx->trigger.sys_id.is_string()) {
    ctx->run_key = Value(std::string_view(
        Dispatcher::record_key(ctx->trigger.table.as_string(), ctx->trigger.sys_id.as_string())));
  }
  if (shutting_down()) ctx->set_cancel_flag();
  return ctx;
}

FlowRegistry::PlanResult EngineCore::test_run_plan(const Context& ctx) {
  return flows.plan_for_stored_test(ctx.flow->id, ctx.test_definition, compile_options());
}

void EngineCore::restore_test_run(Context& ctx) {
  if (ctx.test_definition.is_null()) return;
  FlowRegistry::PlanResult p = test_run_plan(ctx);
  if (p.plan) {
    ctx.plan = std::move(p.plan);
  } else {
    ctx.compile_error = std::make_unique<const std::string>("flow '" + ctx.flow->id + "' does not compile: " + p.error);
  }
}

namespace {

// The definitions of one stored plan version, for the compiler.
class StoredVersions final : public DefinitionLookup {
 public:
  const Definition* find(UnitType type, std::string_view id) const override {
    auto it = defs_.find({type, std::string(id)});
    return it == defs_.end() ? nullptr : &it->second;
  }
  void add(Definition d) { defs_[{d.type, d.id}] = std::move(d); }

 private:
  std::map<std::pair<UnitType, std::string>, Definition> defs_;
};

}  // namespace

Result<std::shared_ptr<const Plan>> EngineCore::compile_stored_version(const std::string& flow_id, const Value& uses,
                                                                       const std::string& version) {
  StoredVersions lookup;
  const Definition* root = nullptr;
  for (const Value& u : uses.items()) {
    const std::string type(u.at(0).as_string()), id(u.at(1).as_string()), fingerprint(u.at(2).as_string());
    Result<Value> body = store->load_definition_version(type, id, fingerprint);
    if (!body) return body.error();
    if (body->is_null()) return Error{type + " '" + id + "' version " + fingerprint + " is not in the file"};
    Definition d;
    Diagnostics diags;
    if (!read_definition(*body, "", "", &d, &diags)) {
      return Error{type + " '" + id + "' version " + fingerprint + " cannot be read back: " + diags.describe()};
    }
    d.status = DefinitionStatus::kPublished;
    lookup.add(std::move(d));
  }
  root = lookup.find(UnitType::kFlow, flow_id);
  if (!root) return Error{"its checkpoint does not name the flow's own version"};
  Diagnostics diags;
  std::shared_ptr<const Plan> plan = Compiler(lookup, &actions, compile_options()).compile_flow(*root, &diags);
  if (!plan) return Error{"it does not compile now: " + diags.describe()};
  if (plan->version != version) return Error{"its definitions compile to " + plan->version};
  return plan;
}

Status EngineCore::resume_from_checkpoint(Context& ctx, const Value& checkpoint, StoredPlans* old_plans, bool resting) {
  const std::string version = checkpoint_plan_version(checkpoint);
  if (checkpoint["unreadable"].is_string()) {
    return Error{"its stored state cannot be read: " + std::string(checkpoint["unreadable"].as_string())};
  }
  if (version.empty()) return Error{"its stored state is not a checkpoint"};
  FlowRegistry::PlanResult p = plan_of(*ctx.flow);
  if (!p.plan || p.plan->version != version) {
    // The flow (or something it uses) changed since: the context resumes on its own
    // version, compiled from the versions the file keeps (once: readers wait for one
    // another's compile).
    MutexLock lock(old_plans->mu);
    auto cached = old_plans->by_version.find(version);
    if (cached != old_plans->by_version.end()) {
      p.plan = cached->second;
    } else {
      Result<std::shared_ptr<const Plan>> old = compile_stored_version(ctx.flow->id, checkpoint["uses"], version);
      std::string tested;  // what the definition a test run keeps gave instead, when it did not give `version`
      if (!old && !ctx.test_definition.is_null()) {
        // A test run (test_flow) of a draft: the file keeps published versions only, and
        // the row keeps the definition it tests, compiled again as when it was queued.
        FlowRegistry::PlanResult t = test_run_plan(ctx);
        if (t.plan && t.plan->version == version) {
          old = std::move(t.plan);
        } else {
          tested = "; the definition its test run keeps " +
                   (t.plan ? "compiles to " + t.plan->version : "does not compile now: " + t.error);
        }
      }
      if (!old) {
        return Error{"its plan version " + version + " is gone (" + old.message() + tested + "; flow '" +
                     ctx.flow->id + "' " + (p.plan ? "is now at " + p.plan->version : "does not compile now: " + p.error) +
                     ")"};
      }
      p.plan = *old;
      old_plans->by_version.emplace(version, p.plan);
    }
  }
  for (const Node* n : nodes_of(*p.plan)) {
    const auto* step = std::get_if<ActionStep>(&n->op);
    if (step && step->kind == ActionKind::kCustom && !actions.action(step->callee)) {
      return Error{"its custom action type '" + step->action + "' is no longer registered"};
    }
  }
  return restore_checkpoint(ctx, checkpoint, std::move(p.plan), resting);
}

Value EngineCore::recover() {
  MutexLock lock(recovery_mu_);
  if (recovery_.done || !journal) return Value();
  recovery_.done = true;
  const TimeMs now = clock.now();
  std::vector<Value> activated, started, resumed, restarted, expired, failed, released, problems, missed;
  for (const std::string& p : recovery_.problems) problems.push_back(text(p));

  // Flows active in the store are active again (unless a load decided since).
  for (const StoredDefinition& d : recovery_.active) {
    const bool reloaded =
        std::find(recovery_.loaded.begin(), recovery_.loaded.end(), d.id) != recovery_.loaded.end();
    FlowSlot* slot = flows.slot(d.id);
    if (!reloaded) {
      // Its schedule was checked against min_schedule_interval when it was activated; a
      // limit raised since leaves it running, as it would without the restart.
      CompileOptions reactivation = compile_options();
      reactivation.min_schedule_interval = 0;
      // Its published version, as it was: a draft saved since stays a draft.
      if (Status s = flows.activate(d.id, reactivation, now, FlowRegistry::Activating::kPublished); !s) {
        problems.push_back(text("flow '" + d.id + "' was active and cannot be activated again: " + s.message()));
        continue;
      }
      activated.push_back(text(d.id));
      slot = flows.slot(d.id);
    }
    if (slot && slot->active.load(std::memory_order_acquire)) {
      const bool same_version = slot->trigger().version == d.published_fingerprint;
      if (Value m = restore_schedule(slot, d.activated_at, d.last_tick, same_version); !m.is_null()) {
        missed.push_back(std::move(m));
      }
    }
  }

  JournalEntry entry;
  // Starts `ctx` (not started, or resumed between steps) once the recovery is durable.
  auto queue = [&](const std::shared_ptr<Context>& ctx) {
    dispatcher.restore_running(*ctx);
    work_added();
    entry.pushes.push_back(ctx.get());
    contexts.restore(ctx);
  };
  // Ends `c` in error. Its record, which the ranges read leave out where a checkpoint
  // holds it, is read here: its steps so far stay in what it leaves.
  auto fail = [&](const StoredContext& c, const std::string& reason) {
    std::optional<StoredContext> whole;
    if (c.record.is_null() && !c.checkpoint.is_null()) {
      if (Result<std::optional<StoredContext>> read = store->load_context(c.seq); read && *read) whole = std::move(**read);
    }
    end_stored_context(whole ? *whole : c, reason, now, &entry);
    failed.push_back(failure(c, reason));
  };

  // Contexts that held a lock: their record may be written to while they wait (a lease
  // that runs out), so they are not restored resting.
  std::set<uint64_t> holders;
  for (const StoredLock& l : recovery_.locks) {
    for (const Value& h : l.state["holders"].items()) holders.insert(seq_of(h["context"]));
  }
  StoredPlans old_plans;  // versions compiled from the file

  // One stored context as a reader made it: the context, or why it cannot be (then its row
  // whole, to end it with); once made, the row keeps its plain columns only.
  struct Built {
    StoredContext row;
    std::shared_ptr<Context> ctx;
    std::string reason;
  };
  // Makes the context of a row: queued, or resumed from its checkpoint. Any thread.
  auto build = [&](StoredContext&& c) {
    Built b;
    if (!is_final_context_status(c.status)) b.ctx = context_from_store(c, &b.reason);
    if (b.ctx && c.status != kQueuedStatus) {
      if (c.checkpoint.is_null() && c.status == "waiting") b.reason = "no checkpoint of its wait was stored";
      if (!c.checkpoint.is_null()) {
        const bool resting = journal && !holders.contains(c.seq);
        if (Status s = resume_from_checkpoint(*b.ctx, c.checkpoint, &old_plans, resting); !s) b.reason = s.message();
        if (b.ctx->state) {
          // The version of its record a wait saw is most often the one that triggered it (an
          // approval waits on the request that started it): one copy for both, as before the
          // restart, when both were the table's.
          Value& seen = b.ctx->state->wait.seen;
          if (seen.is_object() && !seen.same_storage(b.ctx->trigger.record) && seen == b.ctx->trigger.record) {
            seen = b.ctx->trigger.record;
          }
        }
      }
    }
    if (b.ctx && b.reason.empty()) {
      // Let go here, on the thread that parsed them.
      c.trigger = Value();
      c.inputs = Value();
      c.cause = Value();
      c.record = Value();
      c.checkpoint = Value();
    }
    b.row = std::move(c);
    return b;
  };

  // The contexts the store held that had not ended (and ended ones without their record),
  // read a range of seqs at a time: `visit` sees each of them, in seq order. Two reader
  // threads (OrderedReadAhead, for the whole recovery, so their allocator caches stay warm)
  // read, parse and make the contexts of the next ranges (Store::list_contexts may run on
  // any thread, and parses after it lets the file go) while this thread puts back those of
  // the one before, in seq order: only kReadAhead + 1 ranges are in flight besides the
  // contexts already back. Each range is its reader's until next() hands it over.
  std::string read_error;
  const uint64_t last_seq = recovery_.last_seq;
  auto for_each_stored = [&](auto&& visit) {
    constexpr uint64_t kRange = 2048;  // seqs per read (a read returns at most this many rows)
    constexpr size_t kReadAhead = 2;
    constexpr size_t kReaders = 2;
    Store* const from = store.get();
    auto read = [from, last_seq, &build](uint64_t after) -> Result<std::vector<Built>> {
      ContextQuery q;
      q.loaded_only = true;
      q.after_seq = after;
      q.up_to_seq = std::min(last_seq, after + kRange);
      q.limit = kRange;
      q.records_of_checkpointed = false;  // read by `fail` if it needs one
      Result<std::vector<StoredContext>> rows = from->list_contexts(q);
      if (!rows) return rows.error();
      std::vector<Built> built;
      built.reserve(rows->size());
      for (StoredContext& c : *rows) built.push_back(build(std::move(c)));
      return built;
    };
    const size_t ranges = static_cast<size_t>((last_seq + kRange - 1) / kRange);
    OrderedReadAhead<Result<std::vector<Built>>> ahead(ranges, kReaders, kReadAhead + 1,
                                                       [&](size_t i) { return read(i * kRange); });
    while (std::optional<Result<std::vector<Built>>> rows = ahead.next()) {
      if (!*rows) {
        read_error = rows->message();
        return;
      }
      for (Built& b : **rows) visit(b);
    }
  };

  // Contexts that were running or waiting resume from their checkpoints; an ended one whose
  // record was not stored gets one now; queued ones are made now and start below, once the
  // others are back, in their order.
  std::map<uint64_t, std::shared_ptr<Context>> live;  // the lock holders that came back, by seq
  // Counts `ctx` as waiting and takes it over to run; the report names a wait whose time
  // ran out while no engine ran (it fires at once).
  auto take_waiting = [&](const std::shared_ptr<Context>& ctx) {
    if (const TimeMs d = ctx->exec().wait.deadline; d >= 0 && d <= now) {
      expired.push_back(Value::object({{"context", ctx->id}, {"what", Value("wait")}}));
    }
    waiting_.fetch_add(1, std::memory_order_acq_rel);
    ctx->begin_run();
  };
  // Registers the wait of `ctx` again (its wait already bound again: rebind_wait): for the
  // rest of its timer, for its record, or in a lock's queue.
  auto register_wait = [&](const std::shared_ptr<Context>& ctx) {
    take_waiting(ctx);
    if (const uint64_t wait_id = park(ctx.get(), false); wait_id != 0) {
      // Parked from its stored checkpoint, which is durable, and let go: it rests at once.
      rest_when(*ctx, Context::RestCondition::kDurable, wait_id);
      rest_when(*ctx, Context::RestCondition::kLetGo, wait_id);
    }
  };
  // A timer or record wait waits again as soon as its range is read. Record and timer
  // waits carry no time of asking (requested_at is a lock request's), so they wait again in
  // seq order, the order their ranges come in, as they did when all were sorted at the end;
  // and what they wake is held until recovery ends (holding_ready_), so that nothing runs
  // before the locks' holders and queues are back. A wait that cannot be bound again is
  // left for the loop below, which ends its context in error once the locks are back.
  auto wait_now = [&](const std::shared_ptr<Context>& ctx) {
    const WaitRequest::Kind kind = ctx->exec().wait.kind;
    if (kind != WaitRequest::Kind::kTimer && kind != WaitRequest::Kind::kRecord) return false;
    if (!Interpreter(*this, *ctx).rebind_wait()) return false;
    register_wait(ctx);
    return true;
  };
  {
    MutexLock hold(held_mu_);
    holding_ready_.store(true, std::memory_order_release);
  }
  // Whatever way recover() returns, what was woken meanwhile goes to the workers.
  struct ReleaseHeld {
    EngineCore* core;
    ~ReleaseHeld() { core->release_held_ready(); }
  } release_held{this};
  std::vector<std::shared_ptr<Context>> parked;
  std::vector<std::shared_ptr<Context>> queued;  // by seq
  for_each_stored([&](Built& b) {
    const StoredContext& c = b.row;
    if (c.status == kQueuedStatus) {
      if (!b.ctx) {
        fail(c, "queued before the engine stopped, and cannot start now: " + b.reason);
      } else {
        queued.push_back(std::move(b.ctx));
      }
      return;
    }
    if (is_final_context_status(c.status)) {
      fail(c, "it ended before the engine stopped, and its record was not stored");
      return;
    }
    if (!b.reason.empty()) {
      fail(c, "the engine stopped while this context was " + std::string(c.status == "waiting" ? "waiting" : "running") +
                  ", and it cannot resume: " + b.reason);
      return;
    }
    const std::shared_ptr<Context> ctx = std::move(b.ctx);
    if (ctx->resting()) resting_.fetch_add(1, std::memory_order_acq_rel);
    if (holders.contains(ctx->seq)) live.emplace(ctx->seq, ctx);
    if (!ctx->state) {
      // It never got past a step that writes: nothing it did is durable but what a custom
      // action did (at least once). It starts again from its trigger.
      restarted.push_back(text(c.id));
      queue(ctx);
    } else if (ctx->exec().parked) {
      resumed.push_back(text(c.id));
      dispatcher.restore_running(*ctx);
      contexts.restore(ctx);
      if (!wait_now(ctx)) parked.push_back(ctx);
    } else {
      resumed.push_back(text(c.id));
      queue(ctx);
    }
  });
  perturb(PerturbPoint::kRecoveryBeforeLocks);
  // Locks: the holders that came back hold again, with their tokens and leases (an expired
  // lease ends at once, as if unlocked); what the others held is released.
  for (const StoredLock& l : recovery_.locks) {
    bool all_back = true, any_back = false;
    for (const Value& h : l.state["holders"].items()) {
      auto it = live.find(seq_of(h["context"]));
      if (it != live.end() && dispatcher.restore_holder(it->second, l.name, h["weight"].as_int(), h["token"].as_int(),
                                                        time_of(h["acquired_at"]), time_of(h["expires_at"]))) {
        any_back = true;
        if (time_of(h["expires_at"]) <= now) {
          // Its lease ran out while no engine ran: it ends at once, as if unlocked.
          expired.push_back(Value::object({{"context", h["context"]}, {"lock", text(l.name)}, {"what", Value("lease")}}));
        }
      } else {
        all_back = false;
      }
    }
    if (!all_back) released.push_back(l.state);
    if (!any_back) dispatcher.forget_stored_lock(l.name);
  }
  // Contexts waiting for a lock ask again, in the order they asked before (a grant made
  // before the restart is found held: granted again at once with its token); a timer or
  // record wait that could not wait again as it was read ends here, in error.
  auto asked_before = [](const std::shared_ptr<Context>& a, const std::shared_ptr<Context>& b) {
    return a->exec().wait.requested_at != b->exec().wait.requested_at
               ? a->exec().wait.requested_at < b->exec().wait.requested_at
               : a->seq < b->seq;
  };
  // They arrive by seq, most often already in this order (only lock requests say when).
  if (!std::is_sorted(parked.begin(), parked.end(), asked_before)) {
    std::stable_sort(parked.begin(), parked.end(), asked_before);
  }
  for (const std::shared_ptr<Context>& ctx : parked) {
    if (Status s = Interpreter(*this, *ctx).rebind_wait(); !s) {
      take_waiting(ctx);
      waiting_.fetch_sub(1, std::memory_order_acq_rel);
      if (ctx->resting()) {
        // Its record is in its row: read back, so that what it did stays in what it leaves.
        Result<std::optional<StoredContext>> row = store->load_context(ctx->seq);
        if (row && *row) {
          (void)ctx->restore_record_state((*row)->checkpoint["record"], *ctx->plan, nodes_of(*ctx->plan), ctx->status());
        }
        ctx->end_rest();
        resting_.fetch_sub(1, std::memory_order_acq_rel);
      }
      const Value reason = text("the engine stopped while this context was waiting, and it cannot resume: " + s.message());
      ctx->end_open_steps(now, reason);
      finish_context(*ctx, ContextStatus::kError, Value::object({{"message", reason}, {"step", Value()}}));
      ctx->state.reset();
      continue;
    }
    const WaitRequest& w = ctx->exec().wait;
    if (w.kind == WaitRequest::Kind::kLock && w.lock_name.is_string()) {
      // Granted before the stop (it came back holding the lock): the grant's wake-up,
      // delivered now, with the outputs it made then.
      WakeUp granted = dispatcher.restored_grant(*ctx, w.lock_name.as_string());
      if (!granted.outputs.is_null()) {
        take_waiting(ctx);
        const uint64_t id = ctx->begin_park();
        ctx->wake(id, std::move(granted));  // kept for end_park
        if (ctx->end_park()) make_ready(ctx.get());
        continue;
      }
    }
    register_wait(ctx);
  }
  // Trigger events that were queued start now, in their order.
  for (const std::shared_ptr<Context>& ctx : queued) {
    queue(ctx);
    started.push_back(ctx->id);
  }
  if (!read_error.empty()) problems.push_back(text("the contexts of the store could not all be read: " + read_error));
  if (started.empty() && resumed.empty() && restarted.empty() && expired.empty() && failed.empty() && released.empty() &&
      activated.empty() && problems.empty() && missed.empty()) {
    refresh_triggers();
    return Value();  // nothing was left to recover
  }
  Value report = Value::object({{"at", text(format_time(now))},
                                {"store", text(store->describe())},
                                {"resumed", Value::array(std::move(resumed))},
                                {"restarted", Value::array(std::move(restarted))},
                                {"expired", Value::array(std::move(expired))},
                                {"started", Value::array(std::move(started))},
                                {"failed", Value::array(std::move(failed))},
                                {"locks_released", Value::array(std::move(released))},
                                {"activated", Value::array(std::move(activated))},
                                {"schedules_missed", Value::array(std::move(missed))},
                                {"problems", Value::array(std::move(problems))}});
  entry.changes.push_back(RecoveryNote{now, report});
  journal->append(std::move(entry));
  engine_log().info("{}: recovered: {} contexts resumed, {} started again, {} queued contexts started, {} contexts "
                    "ended in error, {} locks released, {} schedules missed occurrences",
                    store->describe(), report["resumed"].size(), report["restarted"].size(), report["started"].size(),
                    report["failed"].size(), report["locks_released"].size(), report["schedules_missed"].size());
  for (const Value& f : report["failed"].items()) {
    engine_log().warn("{}: {}", f["context"].as_string(), f["reason"].as_string());
  }
  for (const Value& p : report["problems"].items()) engine_log().warn("{}", p.as_string());
  recovery_.locks.clear();
  recovery_.locks.shrink_to_fit();
  refresh_triggers();
  return report;
}

}  // namespace flowrt
