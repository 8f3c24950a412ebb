#include "tests/simulation/driver.h"

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>

#include "plans/value_json.h"
#include "runtime/engine.h"
#include "runtime/engine_core.h"
#include "tests/simulation/generator.h"
#include "tests/simulation/invariants.h"
#include "tests/simulation/model.h"
#include "tests/simulation/traffic.h"

namespace flowrt::sim {
namespace {

std::vector<Value> new_contexts(const Engine& engine, const Model& model) {
  std::vector<Value> out;
  for (uint64_t seq = model.max_seq() + 1;; ++seq) {
    std::optional<ContextRecord> c = engine.context("ctx-" + std::to_string(seq));
    if (!c) break;
    out.push_back(c->value());
  }
  return out;
}

std::vector<Value> new_skipped(const Engine& engine, const Model& model) {
  std::vector<Value> all = engine.skipped();
  return std::vector<Value>(all.begin() + static_cast<long>(std::min(model.skipped_seen(), all.size())), all.end());
}

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

std::string Coverage::describe() const {
  std::ostringstream o;
  o << seeds << " seeds, " << operations << " operations, " << steps_checked << " steps checked, " << contexts
    << " contexts (max " << max_contexts
    << " in one seed): " << completed << " completed, " << errors << " error, " << cancelled << " cancelled; "
    << "skipped:";
  for (const auto& [reason, n] : skipped) o << " " << reason << "=" << n;
  o << "; locks: " << lock_waits << " queued, " << lock_timeouts << " gave up, " << deadlocks << " deadlocks, "
    << lease_expiries << " lease expiries, " << lock_lost << " lock_lost writes; " << increments
    << " counter increments; wait_for_condition: " << condition_met << " met, " << wait_timeouts << " timed out";
  return o.str();
}

std::string normalised_document(const Value& document) {
  std::vector<Value> contexts;
  for (const Value& c : document["contexts"].items()) {
    contexts.push_back(c.contains("runtime_ms") ? c.with("runtime_ms", Value(0)) : c);
  }
  return document.with("contexts", Value::array(std::move(contexts))).to_json();
}

SeedRun run_seed(uint64_t seed, Coverage* cov) {
  SeedRun run;
  const Scenario s = generate_scenario(seed);
  run.definitions = s.definitions;
  EngineOptions o;
  o.simulation_seed = seed;
  o.seed = seed;
  o.run_clock = [] { return 0.0; };  // running time is real time; the quota stays out of reach
  o.properties.worker_threads = s.workers;
  o.properties.indirect_recursion_limit = s.recursion_limit;
  o.lock_limits = s.lock_limits;
  o.check_invariants = true;
  o.log_level = "off";
  // Between any two steps a context takes inside advance/settle, what must hold at every
  // instant, on the context that stepped and on every lock: an ended context has closed
  // its steps and holds or waits for no lock, held weights within limits, fencing tokens
  // unique, and the lock table's own check. (The rest is checked after each operation.)
  Engine* running = nullptr;
  o.after_simulated_step = [&run, &running, &s](std::string_view stepped) {
    if (!running || !run.violations.empty()) return;
    Snapshot snap;
    snap.now = running->now();
    snap.locks = running->locks();
    auto add_context = [&](std::string_view id) {
      if (snap.context(id)) return;
      if (std::optional<ContextRecord> c = running->context(id)) {
        snap.by_id[std::string(id)] = snap.contexts.size();
        snap.contexts.push_back(c->value());
      }
    };
    add_context(stepped);
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
  Engine engine(o);
  running = &engine;
  Violations& v = run.violations;
  Diagnostics d = engine.load_text(s.definitions, "simulation.json");
  if (!d.empty()) {
    v.push_back(Violation{"generator", "the generated definitions do not load:\n" + d.describe(), s.definitions});
    return run;
  }
  Model model(s);
  for (const std::string& key : s.lock_names) {
    Result<Value> r = engine.insert(kCounterTable, Value::object({{"name", Value(key)}, {"n", Value(0)}}));
    if (!r) {
      v.push_back(Violation{"setup", "insert of counter " + key + ": " + r.message(), ""});
      return run;
    }
    model.external_write(kCounterTable, "insert", *r, Value(), new_contexts(engine, model), new_skipped(engine, model),
                         engine.now(), &v);
  }

  std::set<std::string> cancelled;  // cancelled while not ended: must end cancelled at the next settle
  // The stateless checks, at any moment; the model's look at the steps that ran, and the
  // cancels, once the contexts have run (after advance and settle).
  auto check = [&](Moment m) {
    const Snapshot snap = Snapshot::from_document(engine.document(), engine.now());
    if (m != Moment::kAfterOperation) model.after_run(snap, &v);
    check_contexts(snap, m, &v);
    check_locks(snap, s.lock_limits, m, &v);
    check_fifo(snap, &v);
    check_counters(snap, s.lock_names, &v);
    const std::string lv = engine.core().dispatcher.lock_violation();
    if (!lv.empty()) v.push_back(Violation{"(c) locks", "the lock table's own check: " + lv, ""});
    if (m == Moment::kAfterOperation) return;
    for (const std::string& id : cancelled) {
      const Value* c = snap.context(id);
      if (c && (*c)["status"].as_string() != "cancelled") {
        v.push_back(Violation{"(b) contexts ended or waiting on something that exists",
                              id + " was cancelled while it waited or was queued, but ended " +
                                  std::string((*c)["status"].as_string()),
                              to_pretty_json(*c)});
      }
    }
    cancelled.clear();
    if (m == Moment::kEnd && cov) cov->count(snap);
  };

  Traffic traffic(s, seed);
  for (int64_t i = 0; i < s.operations && v.empty(); ++i) {
    TrafficView view{model.live_records(), model.max_seq(), model.active_map()};
    const Op op = traffic.next(view);
    run.log.push_back(op.describe());
    const TimeMs now = engine.now();
    const std::string what = "operation #" + std::to_string(i + 1) + " (" + op.describe() + ")";
    auto fail = [&](const std::string& msg) { v.push_back(Violation{"(a) operations", what + ": " + msg, ""}); };
    Moment moment = Moment::kAfterOperation;
    switch (op.kind) {
      case Op::Kind::kInsert: {
        Result<Value> r = engine.insert(op.table, op.values);
        if (!r) {
          fail("insert failed: " + r.message());
          break;
        }
        model.external_write(op.table, "insert", *r, Value(), new_contexts(engine, model), new_skipped(engine, model), now, &v);
        break;
      }
      case Op::Kind::kUpdate: {
        const Value previous = engine.record(op.table, op.sys_id);
        Result<Value> r = engine.update(op.table, op.sys_id, op.values);
        if (previous.is_null() || !r) {
          fail("the record the model holds live is not there: " + (r ? std::string() : r.message()));
          break;
        }
        model.external_write(op.table, "update", *r, previous, new_contexts(engine, model), new_skipped(engine, model), now, &v);
        break;
      }
      case Op::Kind::kUpdateMissing: {
        Result<Value> r = engine.update(op.table, op.sys_id, op.values);
        if (r) fail("an update of a missing record succeeded");
        model.external_nothing(what, new_contexts(engine, model), new_skipped(engine, model), &v);
        break;
      }
      case Op::Kind::kDelete: {
        Result<Value> r = engine.remove(op.table, op.sys_id);
        if (!r) {
          fail("delete failed: " + r.message());
          break;
        }
        model.external_write(op.table, "delete", *r, Value(), new_contexts(engine, model), new_skipped(engine, model), now, &v);
        break;
      }
      case Op::Kind::kFireEvent: {
        Status st = engine.fire_event(op.name, op.payload);
        if (!st) fail("fire_event failed: " + st.message());
        model.external_event(op.name, new_contexts(engine, model), new_skipped(engine, model), now, &v);
        break;
      }
      case Op::Kind::kCallFlow: {
        Result<std::string> r = engine.call_flow(op.flow, op.values);
        std::optional<std::string> started;
        if (r) started = *r;
        model.external_call(op.flow, started, new_contexts(engine, model), new_skipped(engine, model), now, &v);
        break;
      }
      case Op::Kind::kCancel: {
        std::optional<ContextRecord> c = engine.context(op.context);
        Status st = engine.cancel(op.context);
        if (!st) fail("cancel failed: " + st.message());
        if (c && (c->status() == "in_progress" || c->status() == "waiting")) cancelled.insert(op.context);
        model.external_nothing(what, new_contexts(engine, model), new_skipped(engine, model), &v);
        break;
      }
      case Op::Kind::kCancelUnknown: {
        Status st = engine.cancel(op.context);
        if (st) fail("cancel of an unknown context succeeded");
        model.external_nothing(what, new_contexts(engine, model), new_skipped(engine, model), &v);
        break;
      }
      case Op::Kind::kActivate:
      case Op::Kind::kDeactivate: {
        const bool on = op.kind == Op::Kind::kActivate;
        Status st = on ? engine.activate(op.flow) : engine.deactivate(op.flow);
        if (!st) fail(st.message());
        model.set_active(op.flow, on);
        model.external_nothing(what, new_contexts(engine, model), new_skipped(engine, model), &v);
        break;
      }
      case Op::Kind::kAdvance:
        if (Status st = engine.advance(op.duration); !st) fail(st.message());
        if (engine.now() != now + op.duration) fail("the clock is at " + format_time(engine.now()));
        moment = Moment::kQuiescent;
        break;
      case Op::Kind::kSettle:
        engine.settle(op.duration);
        if (engine.now() > now + op.duration) fail("settle moved the clock past its limit, to " + format_time(engine.now()));
        moment = Moment::kQuiescent;
        break;
    }
    if (v.empty()) check(moment);
  }
  if (v.empty()) {
    engine.settle(int64_t{30} * 24 * 3600 * 1000);
    run.log.push_back("settle (final, 30 days)");
    check(Moment::kEnd);
  }
  if (cov) {
    cov->seeds++;
    cov->operations += run.log.size();
    cov->steps_checked += run.steps_checked;
  }
  run.document = normalised_document(engine.document());
  return run;
}

std::string check_seed(uint64_t seed, const std::string& binary, bool verbose, Coverage* cov) {
  const SeedRun first = run_seed(seed, cov);
  std::string problem;
  if (!first.violations.empty()) {
    problem = describe(first.violations);
  } else {
    const SeedRun second = run_seed(seed, nullptr);
    if (!second.violations.empty()) {
      problem = "(f) replay: the second run of the seed broke an invariant the first kept:\n" + describe(second.violations);
    } else if (second.document != first.document) {
      problem = "invariant (f) replay broken: the same seed gave two different runs; " +
                first_difference(first.document, second.document) + "\n";
    }
  }
  if (!verbose && problem.empty()) return "";
  std::ostringstream o;
  if (!problem.empty()) o << "seed " << seed << " FAILED; replay with\n  " << binary << " --seed " << seed << "\n" << problem;
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
