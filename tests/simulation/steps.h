// FlowBuilder: the steps of one generated flow. Contract: body() returns a valid JSON array
// of steps for flow `f` of scenario `s`, drawn from `g`, using only the pills, transforms
// and conditions the model understands (template_model.h): literals, flow.id, context.id,
// the loop item, trigger.record / previous / payload / time, vars, inputs, and the outputs
// of the custom actions, subflows and action definition the model computes. Writes that
// can start other flows are rationed (a budget per flow) so that chains of flows stay
// small; writes inside loops go to the sink table, which no flow listens to.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/simulation/generator.h"

namespace flowrt::sim {

class FlowBuilder {
 public:
  using json = nlohmann::json;
  // `hang`: this flow may call sim_hang (once); in "hang" scenarios no other flow calls a
  // custom action.
  FlowBuilder(Rng& g, const Scenario& s, const FlowSpec& f, const std::vector<std::string>& api_flows, bool has_vars,
              bool hang = false);
  // The flow's steps (after the version marker, which the caller adds); the last groups
  // of top-level steps are dropped while the flow holds more than max_actions (50) action
  // steps (pills only read earlier steps, so this stays valid).
  json body();

 private:
  std::string next_id() { return "s" + std::to_string(++ids_); }
  std::string on_error() { return g_.chance(0.5) ? "continue" : "stop"; }
  bool record_flow() const { return f_.kind == FlowSpec::Kind::kRecord; }
  bool has_trigger_record() const { return record_flow() && f_.when != "deleted"; }
  bool update_flow() const { return record_flow() && (f_.when == "updated" || f_.when == "created_or_updated"); }
  bool may_call() const { return f_.kind != FlowSpec::Kind::kSchedule; }
  json literal_values();
  json extra_value();
  json lock_step(const std::string& key, int64_t weight, bool counter);
  json decidable_condition(int depth);
  void counter_pattern(json& out);
  void add(json& out, int depth, bool in_loop);
  void add_more(json& out, int depth, bool in_loop, int64_t kind);

  Rng& g_;
  const Scenario& s_;
  const FlowSpec& f_;
  const std::vector<std::string>& api_flows_;
  const bool vars_;
  bool hang_;  // may still call sim_hang
  int ids_ = 0;
  int64_t writes_left_ = 0;
  std::set<std::string> maybe_held_;       // keys an earlier step (in document order) locks
  std::vector<std::string> echo_ids_;      // sim_echo steps so far (their outputs may be read)
};

// Action steps, counted through nested flow logic as SPEC 9.1 counts them.
int64_t action_steps(const nlohmann::json& steps);

// A `log` step with `message` (the flows' markers and the counters' "inc KEY" lines).
nlohmann::json log_step(const std::string& message);

}  // namespace flowrt::sim
