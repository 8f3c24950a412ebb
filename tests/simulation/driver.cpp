#include "tests/simulation/driver.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "plans/value_json.h"
#include "runtime/engine.h"
#include "runtime/engine_core.h"
#include "tests/simulation/commit_log.h"
#include "tests/simulation/generator.h"
#include "tests/simulation/invariants.h"
#include "tests/simulation/model.h"
#include "tests/simulation/perturbation.h"
#include "tests/simulation/sim_actions.h"
#include "tests/simulation/traffic.h"

namespace flowrt::sim {
namespace {

// The first context (or part) where two documents differ.
std::string first_difference(const std::string& a, const std::string& b) {
  Result<Value> va = parse_json(a), vb = parse_json(b);
  if (va && vb) {
    const Value& ca = (*va)["contexts"];
    const Value& cb = (*vb)["contexts"];
    for (size_t i = 0; i < std::max(ca.size(), cb.size()); ++i) {
      if (!(ca.at(i) == cb.at(i))) {
        return "first difference in context #" + std::to_string(i + 1) + ":\nfirst run:\n" + to_pretty_json(ca.at(i)) +
               "\nsecond run:\n" + to_pretty_json(cb.at(i));
      }
    }
    for (const char* part : {"skipped", "records", "locks"}) {
      if (!((*va)[part] == (*vb)[part])) return std::string("the \"") + part + "\" parts differ";
    }
  }
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return "the documents differ from byte " + std::to_string(i);
}

// The `flowrt run` document, as Engine::document() builds it, but a context that had
// ended at an earlier look is not built again (its record no longer changes).
Value current_document(const Engine& engine, std::map<std::string, Value>* ended) {
  std::vector<Value> contexts;
  for (uint64_t seq = 1;; ++seq) {
    const std::string id = "ctx-" + std::to_string(seq);
    if (auto it = ended->find(id); it != ended->end()) {
      contexts.push_back(it->second);
      continue;
    }
    std::optional<ContextRecord> c = engine.context(id);
    if (!c) break;
    Value v = c->value();
    const std::string_view st = v["status"].as_string();
    if (st == "completed" || st == "error" || st == "cancelled") (*ended)[id] = v;
    contexts.push_back(std::move(v));
  }
  std::vector<Member> tables;
  for (const std::string& t : engine.tables()) tables.push_back(Member{Value(std::string_view(t)), Value::array(engine.records(t))});
  return Value::object({{"contexts", Value::array(std::move(contexts))},
                        {"skipped", Value::array(engine.skipped())},
                        {"records", Value::object(std::move(tables))},
                        {"locks", engine.locks()}});
}

// Applies one outside operation to the engine; what it answered.
OpOutcome apply(Engine& engine, const Scenario& s, const Op& op) {
  OpOutcome o;
  auto fail = [&](const std::string& m) {
    o.ok = false;
    o.error = m;
  };
  switch (op.kind) {
    case Op::Kind::kInsert: {
      Result<Value> r = engine.insert(op.table, op.values);
      if (r) o.value = *r; else fail(r.message());
      break;
    }
    case Op::Kind::kUpdate:
    case Op::Kind::kUpdateMissing: {
      Result<Value> r = engine.update(op.table, op.sys_id, op.values);
      if (r) o.value = *r; else fail(r.message());
      break;
    }
    case Op::Kind::kUpdateWhere: {
      Result<size_t> r = engine.update_where(op.table, op.where, op.values);
      if (r) o.value = Value(static_cast<long long>(*r)); else fail(r.message());
      break;
    }
    case Op::Kind::kDelete: {
      Result<Value> r = engine.remove(op.table, op.sys_id);
      if (r) o.value = *r; else fail(r.message());
      break;
    }
    case Op::Kind::kDeleteWhere: {
      Result<size_t> r = engine.remove_where(op.table, op.where);
      if (r) o.value = Value(static_cast<long long>(*r)); else fail(r.message());
      break;
    }
    case Op::Kind::kFireEvent: {
      Status st = engine.fire_event(op.name, op.payload);
      if (!st) fail(st.message());
      break;
    }
    case Op::Kind::kCallFlow: {
      Result<std::string> r = engine.call_flow(op.flow, op.values);
      if (r) o.value = Value(*r); else fail(r.message());
      break;
    }
    case Op::Kind::kTestFlow: {
      const Value record = op.table.empty() ? Value() : Value::object({{"table", Value(op.table)}, {"sys_id", Value(op.sys_id)}});
      Result<std::string> r = engine.test_flow(op.flow, record, op.table.empty() ? op.values : Value());
      if (r) o.value = Value(*r); else fail(r.message());
      break;
    }
    case Op::Kind::kCancel:
    case Op::Kind::kCancelUnknown: {
      Status st = engine.cancel(op.context);
      if (!st) fail(st.message());
      break;
    }
    case Op::Kind::kActivate:
    case Op::Kind::kDeactivate:
    case Op::Kind::kPublish: {
      Status st = op.kind == Op::Kind::kActivate ? engine.activate(op.flow)
                  : op.kind == Op::Kind::kPublish ? engine.publish(op.flow)
                                                  : engine.deactivate(op.flow);
      if (!st) fail(st.message());
      break;
    }
    case Op::Kind::kSave: {
      Status st = engine.save(s.versions.at(op.flow).at(op.version));
      if (!st) fail(st.message());
      break;
    }
    case Op::Kind::kSetProperty: {
      Status st = engine.set_property(op.name, op.values);
      if (!st) fail(st.message());
      break;
    }
    case Op::Kind::kAdvance: {
      Status st = engine.advance(op.duration);
      if (!st) fail(st.message());
      break;
    }
    case Op::Kind::kSettle: engine.settle(op.duration); break;
  }
  return o;
}

// The operations whose failure is part of the traffic (the others must succeed).
bool may_fail(const Op& op) {
  switch (op.kind) {
    case Op::Kind::kUpdate:
    case Op::Kind::kUpdateMissing:
    case Op::Kind::kDelete:
    case Op::Kind::kCallFlow:
    case Op::Kind::kTestFlow:
    case Op::Kind::kCancelUnknown: return true;
    default: return false;
  }
}

}  // namespace

void Coverage::count(const Snapshot& s) {
  contexts += s.contexts.size();
  max_contexts = std::max(max_contexts, s.contexts.size());
  for (const Value& c : s.contexts) {
    const std::string_view st = c["status"].as_string();
    completed += st == "completed";
    errors += st == "error";
    cancelled += st == "cancelled";
    for (const Value& l : c["logs"].items()) {
      const std::string_view m = l["message"].as_string();
      lock_waits += m.find("': waiting;") != std::string_view::npos;
      lock_timeouts += m.find("not granted") != std::string_view::npos;
      deadlocks += m.find("deadlock:") != std::string_view::npos;
      lease_expiries += m.find("max_duration") != std::string_view::npos;
      increments += m.starts_with("inc ");
    }
    for (const Value& step : c["steps"].items()) {
      lock_lost += step["outputs"]["error"].as_string().starts_with("lock_lost");
      if (step["action"].as_string() == "wait_for_condition" && step["status"].as_string() == "completed") {
        (step["outputs"]["timed_out"].as_bool() ? wait_timeouts : condition_met)++;
      }
    }
  }
  for (const Value& k : s.skipped) skipped[std::string(k["reason"].as_string())]++;
}

void Coverage::add_model(const std::map<std::string, size_t>& counts) {
  for (const auto& [k, n] : counts) model[k] += n;
}

size_t Coverage::of(const std::string& model_count) const {
  auto it = model.find(model_count);
  return it == model.end() ? 0 : it->second;
}

std::string Coverage::describe() const {
  std::ostringstream o;
  o << seeds << " seeds, " << operations << " operations, " << steps_checked << " steps checked, " << contexts
    << " contexts (max " << max_contexts << " in one seed): " << completed << " completed, " << errors << " error, "
    << cancelled << " cancelled; skipped:";
  for (const auto& [reason, n] : skipped) o << " " << reason << "=" << n;
  o << "; locks: " << lock_waits << " queued, " << lock_timeouts << " gave up, " << deadlocks << " deadlocks, "
    << lease_expiries << " lease expiries, " << lock_lost << " lock_lost writes; " << increments
    << " counter increments; wait_for_condition: " << condition_met << " met, " << wait_timeouts << " timed out; model:";
  for (const auto& [k, n] : model) o << " " << k << "=" << n << ";";
  return o.str();
}

std::string normalised_document(const Value& document) {
  std::vector<Value> contexts;
  for (const Value& c : document["contexts"].items()) {
    contexts.push_back(c.contains("runtime_ms") ? c.with("runtime_ms", Value(0)) : c);
  }
  return document.with("contexts", Value::array(std::move(contexts))).to_json();
}

SeedRun run_seed(uint64_t seed, Variant variant, Coverage* cov, const Sabotage& sabotage) {
  SeedRun run;
  const bool sim = variant == Variant::kSimulated;
  const Scenario s = generate_scenario(seed, variant);
  run.definitions = s.definitions;
  SimActions actions(!sim);
  CommitLog commits(!sim);
  const bool real_clock = variant == Variant::kRealClock;
  EngineOptions o;
  if (sim) o.simulation_seed = seed;
  o.virtual_clock = !real_clock;
  o.seed = seed;
  o.run_clock = actions.run_clock();
  o.properties.worker_threads = s.workers;
  o.properties.indirect_recursion_limit = s.recursion_limit;
  o.lock_limits = s.lock_limits;
  o.check_invariants = true;
  o.log_level = "off";
  o.on_commit = commits.observer();
  // Between any two steps a context takes inside advance/settle (simulation mode), what
  // must hold at every instant, on the context that stepped and on every lock: an ended
  // context has closed its steps and holds or waits for no lock, held weights within
  // limits, fencing tokens unique, and the lock table's own check.
  Engine* running = nullptr;
  // Records as of each context's last step (a record changes only when its context
  // steps, but for log lines the checks here do not read): only the context that stepped
  // is built again, and only when a check reads it.
  std::map<std::string, Value> latest;
  if (sim && !std::getenv("FLOWRT_SIM_NO_BETWEEN")) {
    o.after_simulated_step = [&run, &running, &s, &latest](std::string_view stepped) {
      if (!running || !run.violations.empty()) return;
      latest.erase(std::string(stepped));
      Snapshot snap;
      snap.now = running->now();
      snap.locks = running->locks();
      auto add_context = [&](std::string_view id) {
        if (snap.context(id)) return;
        auto it = latest.find(std::string(id));
        if (it == latest.end()) {
          std::optional<ContextRecord> c = running->context(id);
          if (!c) return;
          it = latest.emplace(std::string(id), c->value()).first;
        }
        snap.by_id[std::string(id)] = snap.contexts.size();
        snap.contexts.push_back(it->second);
      };
      // The context that stepped, when it ended (then its steps must all be closed).
      if (const KeptContext c = running->core().contexts.find(stepped); c && c.finished()) add_context(stepped);
      for (const Value& l : snap.locks.items()) {
        for (const Value& h : l["holders"].items()) add_context(h["context"].as_string());
        for (const Value& w : l["waiters"].items()) add_context(w["context"].as_string());
      }
      check_contexts(snap, Moment::kBetweenSteps, &run.violations);
      check_locks(snap, s.lock_limits, Moment::kBetweenSteps, &run.violations);
      const std::string lv = running->core().dispatcher.lock_violation();
      if (!lv.empty()) run.violations.push_back(Violation{"(c) locks", "the lock table's own check: " + lv, ""});
      ++run.steps_checked;
    };
  }
  std::optional<Perturbation> perturbation;
  if (!sim) perturbation.emplace(seed);
  Model model(s);
  Violations& v = run.violations;
  {
    Engine engine(o);
    running = &engine;
    commits.set_clock(&engine.core().clock);
    for (CustomActionType& t : actions.types()) {
      if (Status st = engine.register_action(std::move(t)); !st) v.push_back(Violation{"setup", st.message(), ""});
    }
    Diagnostics d = engine.load_text(s.definitions, "simulation.json");
    if (!d.empty()) v.push_back(Violation{"generator", "the generated definitions do not load:\n" + d.describe(), s.definitions});
    model.loaded(engine.now());

    std::set<std::string> cancelled;  // cancelled while not ended: must end cancelled (simulation mode)
    std::map<std::string, Value> ended;  // records of contexts that had ended at a look
    const bool trace = std::getenv("FLOWRT_SIM_TRACE") != nullptr;  // each operation as it is applied
    auto run_op = [&](const Op& op, size_t number) {
      run.log.push_back(op.describe());
      if (trace) std::fprintf(stderr, "[ simulation ] #%zu %s\n", number, op.describe().c_str());
      const uint64_t before = engine.core().dispatcher.last_commit();
      const TimeMs now = engine.now();
      std::optional<ContextRecord> target;
      if (sim && op.kind == Op::Kind::kCancel) target = engine.context(op.context);
      model.begin_op(op, before, now);
      const OpOutcome outcome = apply(engine, s, op);
      model.end_op(outcome, engine.core().dispatcher.last_commit(), engine.now());
      const std::string what = "operation #" + std::to_string(number) + " (" + op.describe() + ")";
      if (!outcome.ok && !may_fail(op)) v.push_back(Violation{"(a) operations", what + " failed: " + outcome.error, ""});
      if (op.kind == Op::Kind::kCancelUnknown && outcome.ok) v.push_back(Violation{"(a) operations", what + " succeeded", ""});
      if (op.kind == Op::Kind::kAdvance && engine.now() != now + op.duration) {
        v.push_back(Violation{"(a) operations", what + ": the clock is at " + format_time(engine.now()), ""});
      }
      if (op.kind == Op::Kind::kSettle && !real_clock && engine.now() > now + op.duration) {
        v.push_back(Violation{"(a) operations", what + ": settle moved the clock past its limit, to " + format_time(engine.now()), ""});
      }
      if (target && (target->status() == "in_progress" || target->status() == "waiting")) cancelled.insert(op.context);
    };
    // The checks: the model (its commits, steps, tables, locks) and the stateless ones.
    // With real threads only when nothing runs (after advance and settle).
    auto check = [&](Moment m) {
      if (!v.empty()) return;
      if (!sim && m == Moment::kAfterOperation) return;
      // On the real clock a timer may fire while the document is read: only the end,
      // when nothing is left to fire, is a moment to look.
      if (real_clock && m != Moment::kEnd) return;
      std::vector<CommitRecord> taken = commits.take();
      if (m == Moment::kAfterOperation) {
        // No context ran: the model reads the operation's commits, the contexts they
        // started and the skipped list (the whole document waits for advance/settle).
        std::vector<Value> started;
        for (const CommitRecord& c : taken) {
          for (const CommitRecord::Started& st : c.started) {
            if (std::optional<ContextRecord> r = engine.context(st.id)) started.push_back(r->value());
          }
        }
        Value light = Value::object({{"contexts", Value::array(std::move(started))}, {"skipped", Value::array(engine.skipped())},
                                     {"records", Value::empty_object()}, {"locks", Value::empty_array()}});
        if (sabotage && sabotage(&taken, &light)) run.sabotaged = true;
        model.checkpoint(std::move(taken), Snapshot::from_document(light, engine.now()), commits, false, &v);
        return;
      }
      Value document = current_document(engine, &ended);
      if (sabotage && sabotage(&taken, &document)) run.sabotaged = true;
      const Snapshot snap = Snapshot::from_document(document, engine.now());
      model.checkpoint(std::move(taken), snap, commits, true, &v);
      model.check_commit_seqs(
          [&engine](const std::string& id) {
            const KeptContext c = engine.core().contexts.find(id);
            return c ? c.commit_seq() : 0;
          },
          &v);
      check_contexts(snap, m, &v);
      check_locks(snap, s.lock_limits, m, &v);
      check_fifo(snap, &v, !real_clock);
      check_counters(snap, s.lock_names, &v);
      const std::string lv = engine.core().dispatcher.lock_violation();
      if (!lv.empty()) v.push_back(Violation{"(c) locks", "the lock table's own check: " + lv, ""});
      if (const char* dump = std::getenv("FLOWRT_SIM_DUMP"); dump && *dump && !v.empty()) {
        // The document the failing checks read, for a closer look.
        if (FILE* f = std::fopen(dump, "w")) {
          std::fputs(to_pretty_json(document).c_str(), f);
          std::fclose(f);
        }
      }
      if (m == Moment::kAfterOperation) return;
      for (const std::string& id : cancelled) {
        const Value* c = snap.context(id);
        if (c && (*c)["status"].as_string() != "cancelled") {
          v.push_back(Violation{"(b) contexts ended or waiting on something that exists",
                                id + " was cancelled while it waited or was queued, but ended " + std::string((*c)["status"].as_string()),
                                to_pretty_json(*c)});
        }
      }
      cancelled.clear();
      if (m == Moment::kEnd && cov) cov->count(snap);
    };

    size_t number = 0;
    for (const std::string& key : s.lock_names) {
      Op op;
      op.kind = Op::Kind::kInsert;
      op.table = kCounterTable;
      op.values = Value::object({{"name", Value(key)}, {"n", Value(0)}});
      run_op(op, ++number);
    }
    check(Moment::kAfterOperation);
    Traffic traffic(s, seed);
    for (int64_t i = 0; i < s.operations && v.empty(); ++i) {
      const Op op = traffic.next(model.view());
      run_op(op, ++number);
      check(op.kind == Op::Kind::kAdvance || op.kind == Op::Kind::kSettle ? Moment::kQuiescent : Moment::kAfterOperation);
    }
    if (v.empty()) {
      Op last;
      last.kind = Op::Kind::kSettle;
      last.duration = int64_t{30} * 24 * 3600 * 1000;
      run_op(last, ++number);
      run.log.back() += " (final)";
      check(Moment::kEnd);
    }
    if (cov) {
      cov->seeds++;
      cov->operations += run.log.size();
      cov->steps_checked += run.steps_checked;
      cov->add_model(model.counts());
    }
    run.document = normalised_document(engine.document());
    running = nullptr;
    // A never-returning action was given up on (its context ended): let its thread end
    // before the engine goes.
    actions.release_hung();
  }
  return run;
}

std::string compare_runs(const SeedRun& first, const SeedRun& second) {
  if (!second.violations.empty()) {
    return "(f) replay: the second run of the seed broke an invariant the first kept:\n" + describe(second.violations);
  }
  if (second.document != first.document) {
    return "invariant (f) replay broken: the same seed gave two different runs; " + first_difference(first.document, second.document) + "\n";
  }
  return "";
}

std::string check_seed(uint64_t seed, Variant variant, const std::string& binary, bool verbose, Coverage* cov) {
  const SeedRun first = run_seed(seed, variant, cov);
  std::string problem;
  if (!first.violations.empty()) {
    problem = describe(first.violations);
  } else if (variant == Variant::kSimulated) {
    problem = compare_runs(first, run_seed(seed, variant, nullptr));
  }
  if (!verbose && problem.empty()) return "";
  std::ostringstream o;
  if (!problem.empty()) {
    o << "seed " << seed << " (" << variant_name(variant) << ") FAILED; replay with\n  " << binary << " --variant "
      << variant_name(variant) << " --seed " << seed << "\n" << problem;
  }
  o << "operations of seed " << seed << ":\n";
  for (size_t i = 0; i < first.log.size(); ++i) o << "  #" << i + 1 << " " << first.log[i] << "\n";
  if (verbose) o << "definitions: " << first.definitions << "\nfinal document: " << first.document << "\n";
  if (problem.empty()) {
    std::fputs(o.str().c_str(), stdout);
    return "";
  }
  return o.str();
}

}  // namespace flowrt::sim
