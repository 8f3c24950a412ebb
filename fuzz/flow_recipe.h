// FlowRecipe: bytes (a recipe) -> a set of valid definitions and the lock limits they use,
// so that the events fuzz target's input chooses the flows it runs.
//
// Every recipe gives definitions that load (a recipe that does not is a bug here): up to
// five flows `fz_f0`..`fz_f4` (record triggers on tables t0/t1 with conditions and run
// options, event triggers e0/e1, API flows, schedules of 10 min or more), two subflows
// `fz_sub0`/`fz_sub1` that may call each other, and an action definition `fz_act`. Their
// steps come from the bytes: lock and unlock of two names, `pool` and `gate`, with weights
// (limits 1-4 and 1-3, also from the bytes), waits, wait_for_condition, record writes (also
// fenced, `while_holding`), look-ups, for_each, try/catch, if/else_if/else, subflow and
// action calls, start_flow, fire_event, set_variables, fail, end, and the custom C++
// actions of fuzz/fuzz_actions.h. Records are {"n": 0-3, "s": "open"|"closed"}; sys_ids
// `a0`/`a1`/`a2` are the ones an events file can insert.
//
// One run of a generated flow is short: every duration is at most 10 minutes (lock leases
// and give-ups at most 1 h), every loop at most 5 items, every unit at most 30 action
// steps. And the contexts one context starts are few: only a flow's own steps outside
// loops may start contexts (writes to t0/t1, fire_event, start_flow), at most two per
// flow; other writes go to table t2, which no generated flow listens to. With the
// target's indirect_recursion_limit of 1 a chain of starts is then at most five flows
// long and narrows at each step. (Without these bounds an event fired from a subflow
// that flows call five times started a chain of contexts too long to finish.)
//
// Bytes are read in order; past the end every byte reads 0, and 0 always chooses the
// simplest thing (one flow, one step, a log), so every prefix of a recipe is a recipe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace flowrt::fuzz {

struct GeneratedFlows {
  std::string definitions;                     // a JSON array, for Engine::load_text
  std::map<std::string, int64_t> lock_limits;  // "pool" and "gate", as the weights assume
};

// `declared`: lock limits already declared (a config); a declared `pool` or `gate` keeps
// its limit (the recipe's bytes for it are still read) and weights stay within it.
GeneratedFlows generate_flows(std::string_view recipe, const std::map<std::string, int64_t>& declared = {});

}  // namespace flowrt::fuzz
