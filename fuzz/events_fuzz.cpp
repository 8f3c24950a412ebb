// Fuzz target: bytes -> flows, a config and a harness events file (SPEC sections 2, 11, 12),
// run on an engine as `flowrt run` runs them, then checked for liveness.
//
// Input format (text):
//   line 1, the setup: a JSON object with any of
//     "recipe":      a string whose bytes generate definitions (fuzz/flow_recipe.h): up to
//                    five flows of every trigger kind, two subflows and an action
//                    definition, with locks on `pool` and `gate` (weights, limits from the
//                    recipe), fenced writes, waits, wait_for_condition, for_each, try/catch,
//                    run options, and the custom C++ actions of fuzz/fuzz_actions.h;
//     "definitions": definitions (an array or one object), loaded as a flows file is;
//     "config":      a config.json object (SPEC 12), read by runtime/run_config.h as
//                    `flowrt run` reads its config (locks it does not declare get the
//                    recipe's limits).
//   A line 1 that is not a JSON object is itself the recipe (its raw bytes).
//   lines 2 on: the events file, given whole to Harness::run_text, the reader `flowrt run`
//   uses (line splitting, blank lines, per-line budgets, line-numbered errors, the implicit
//   final settle); its lines are numbered from 1 in errors.
// Generated definitions must load (else the recipe generator has a bug: abort); the setup's
// own definitions may be refused (the events then run on the generated flows alone), and a
// bad config runs nothing, as `flowrt run` exits 1 on one.
//
// Each input gets a fresh Engine: virtual clock, one worker thread (config or set_property
// may make it two), lock invariants checked, the four custom action types registered.
// Bounds that keep one execution short (the engine itself is not changed): inputs over
// 64 KiB are refused; max_iterations (<= 50), indirect_recursion_limit (1) and
// worker_threads (1-2) are clamped, in the config and in set_property; every op passes
// through OpBounds (fuzz/op_bounds.h: at most 64 ops and none once 2000 contexts have
// started, advance <= 24 h per op and 48 h in all, settle <= 7 days, saved schedules every
// 5 min or more); generated flows wait at most 10 min, lease and give up locks within 1 h,
// loop over at most 5 items, and start few contexts (fuzz/flow_recipe.h). The examples stay
// within these bounds: their corpus entries give the document `flowrt run` gives (but for
// runtime_ms).
//
// After the run (Harness::run_text ends with the final settle) it checks what must hold
// whatever the input:
//   - a refused events line is reported as "events:LINE: message" with a message;
//   - the lock table's invariants (EngineOptions::check_invariants); every lock holder and
//     waiter is a context still in progress or waiting (SPEC section 8);
//   - every context has one of the five statuses, and the `flowrt run` document can be
//     written;
//   - liveness (runtime/liveness.h), after the final settle and after every `advance` and
//     `settle` op (checked as the next op is read, before it is applied): every context has
//     ended, or is parked waiting on something that exists: a timer still in the timer
//     queue and due later, a record that exists with the context among its waiters, not
//     already meeting its condition (a lost wake-up), with its timeout's timer queued, a
//     place in a lock's queue before its give-up time. Settle and advance return only when
//     no context can run, so a context queued, ready or running then fails the check too,
//     as does one parked on nothing.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz/flow_recipe.h"
#include "fuzz/fuzz_actions.h"
#include "fuzz/op_bounds.h"
#include "plans/value_json.h"
#include "runtime/engine.h"
#include "runtime/engine_core.h"
#include "runtime/harness.h"
#include "runtime/liveness.h"
#include "runtime/run_config.h"

namespace {

using namespace flowrt;

constexpr size_t kMaxInput = 64 * 1024;

// FLOWRT_FUZZ_PRINT=1: what an input did, for writing seeds and reading findings.
bool printing() {
  static const bool print = std::getenv("FLOWRT_FUZZ_PRINT") != nullptr;
  return print;
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "events_fuzz: %s\n", what.c_str());
  std::abort();
}

struct Setup {
  std::optional<std::string> recipe;
  Value definitions;  // null: none
  Value config;       // null: none
};

Setup read_setup(std::string_view line) {
  Setup s;
  Value v;
  JsonParseError error;
  JsonLimits limits;
  limits.max_bytes = kMaxInput;
  if (!parse_json(line, &v, &error, limits) || !v.is_object()) {
    s.recipe = std::string(line);
    return s;
  }
  if (const Value* r = v.find("recipe"); r && r->is_string()) s.recipe = std::string(r->as_string());
  s.definitions = v["definitions"];
  if (const Value* c = v.find("config")) s.config = *c;
  return s;
}

// The engine options: the setup's config read as `flowrt run` reads config.json and the
// target's bounds. Nothing when the config is bad.
std::optional<EngineOptions> engine_options(const Setup& setup) {
  EngineOptions options;
  if (!setup.config.is_null()) {
    Result<EngineOptions> read = run_config_from_value(setup.config, "config");
    if (!read) {
      if (read.message().empty()) fail("a refused config without a message");
      return std::nullopt;
    }
    options = std::move(*read);
  } else {
    options.properties.worker_threads = 1;
  }
  EngineProperties& p = options.properties;
  if (p.worker_threads < 1) p.worker_threads = 1;
  if (p.worker_threads > fuzz::OpBounds::kMaxWorkers) p.worker_threads = fuzz::OpBounds::kMaxWorkers;
  if (p.max_iterations > fuzz::OpBounds::kMaxIterations) p.max_iterations = fuzz::OpBounds::kMaxIterations;
  if (p.indirect_recursion_limit > fuzz::OpBounds::kMaxRecursion) p.indirect_recursion_limit = fuzz::OpBounds::kMaxRecursion;
  options.virtual_clock = true;
  options.log_level = "off";
  options.check_invariants = true;
  return options;
}

bool is_status(const std::string& s) {
  return s == "in_progress" || s == "waiting" || s == "completed" || s == "cancelled" || s == "error";
}

void check_engine(Engine& engine) {
  const std::string violation = engine.core().dispatcher.lock_violation();
  if (!violation.empty()) fail("lock table invariant broken: " + violation);
  for (const ContextRecord& c : engine.contexts()) {
    if (!is_status(c.status())) fail(c.id() + " has status '" + c.status() + "'");
  }
  const Value locks = engine.locks();
  for (const Value& lock : locks.items()) {
    for (const char* list : {"holders", "waiters"}) {
      for (const Value& h : lock[list].items()) {
        const std::string id(h["context"].as_string());
        std::optional<ContextRecord> c = engine.context(id);
        if (!c) continue;  // its record was dropped (context_retention); cannot tell
        const std::string s = c->status();
        if (s != "in_progress" && s != "waiting") {
          fail("lock '" + std::string(lock["name"].as_string()) + "' lists " + id + " among its " + list +
               ", but that context is " + s + ": " + locks.to_json());
        }
      }
    }
  }
  std::string out;
  write_json(engine.document(), out);
}

// `when`: which quiescent moment ("after the final settle", ...).
void check_liveness(Engine& engine, const std::string& when) {
  for (const ContextWait& w : context_waits(engine.core())) {
    std::string problem;
    if (w.on == ContextWait::On::kRun) {
      problem = "is " + w.status + " and not parked, although the final settle returned (no context can run)";
    } else if (!w.problem.empty()) {
      problem = "waits on " + w.what + ", but " + w.problem;
    } else if (w.status != "waiting") {
      problem = "is parked on " + w.what + " but its record says " + w.status;
    }
    if (problem.empty()) continue;
    std::optional<ContextRecord> c = engine.context(w.context);
    fail("liveness " + when + ": " + w.context + " " + problem + "\n" + (c ? to_pretty_json(c->value()) : std::string()));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxInput) return -1;  // not added to the corpus
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const size_t newline = text.find('\n');
  const std::string_view first = text.substr(0, newline);
  const std::string_view events = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);

  const Setup setup = read_setup(first);
  std::optional<EngineOptions> options = engine_options(setup);
  if (!options) return 0;
  std::optional<fuzz::GeneratedFlows> generated;
  if (setup.recipe) {
    generated = fuzz::generate_flows(*setup.recipe, options->lock_limits);
    for (const auto& [name, limit] : generated->lock_limits) options->lock_limits.emplace(name, limit);
  }
  Engine engine(std::move(*options));
  fuzz::register_fuzz_actions(engine);
  if (generated) {
    Diagnostics d = engine.load_text(generated->definitions, "recipe.json");
    if (!d.empty()) fail("the recipe's definitions do not load:\n" + d.describe() + "\n" + generated->definitions);
    if (printing()) std::fprintf(stderr, "recipe definitions: %s\n", generated->definitions.c_str());
  }
  if (!setup.definitions.is_null()) {
    Diagnostics d = engine.load_text(setup.definitions.to_json(), "flows.json");
    if (printing() && !d.empty()) std::fprintf(stderr, "setup definitions refused:\n%s\n", d.describe().c_str());
  }

  Harness harness(engine);
  fuzz::OpBounds bounds;
  // Right after an advance or a settle no context can run, until the next op: liveness is
  // checked there too, where waits on timers and locks are still pending.
  std::string quiescent;
  harness.set_op_filter([&](const Value& op) -> Result<Value> {
    if (!quiescent.empty()) check_liveness(engine, quiescent);
    const Value& name = op["op"];
    quiescent = name == Value("advance") || name == Value("settle") ? "after " + op.to_json() : "";
    return bounds(op, engine.stats().contexts_started);
  });
  const Status ran = harness.run_text(events, "events");
  if (!ran) {
    const std::string& m = ran.message();
    const size_t colon = m.find(':', 7);
    if (m.rfind("events:", 0) != 0 || colon == std::string::npos || m.size() <= colon + 2) {
      fail("a refused events line without \"events:LINE: message\": '" + m + "'");
    }
    if (printing()) std::fprintf(stderr, "%s\n", m.c_str());
  }
  check_engine(engine);
  check_liveness(engine, "after the final settle");
  if (printing()) std::fprintf(stderr, "%s\n", to_pretty_json(engine.document()).c_str());
  return 0;
}
