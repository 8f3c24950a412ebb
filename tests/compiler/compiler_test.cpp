// The compiler's plans: versions as fingerprints, dependencies, slots.
#include "compiler/compiler.h"

#include <gtest/gtest.h>

#include <map>

#include "compiler/loader.h"
#include "tests/compiler/map_lookup.h"

namespace flowrt {
namespace {

using test_compiler::MapLookup;

std::vector<Definition> parse(std::string_view text) {
  Diagnostics d;
  std::vector<Definition> out;
  parse_definitions(text, "t.json", &out, &d);
  EXPECT_TRUE(d.empty()) << d.describe();
  return out;
}

constexpr const char* kDefs = R"([
  {"id": "sub", "type": "subflow", "outputs": [{"name": "o", "type": "any"}], "actions": [
    {"action": "assign_outputs", "inputs": {"values": {"o": 1}}}]},
  {"id": "f", "trigger": {"type": "api"}, "variables": {"v": 0}, "actions": [
    {"id": "a", "action": "call_subflow", "inputs": {"subflow": "sub"}},
    {"id": "b", "action": "log", "inputs": {"message": "{{steps.a.o}} {{vars.v}}"}}]}])";

TEST(CompilerTest, Plan_ResolvesPillsToSlots_AndListsDependencies) {
  std::vector<Definition> defs = parse(kDefs);
  MapLookup lookup(defs);
  Compiler compiler(lookup, nullptr, {});
  Diagnostics d;
  std::shared_ptr<const Plan> plan = compiler.compile_flow(defs[1], &d);
  ASSERT_TRUE(plan) << d.describe();
  ASSERT_EQ(plan->units.size(), 2u);
  EXPECT_EQ(plan->units[1].id, "sub");
  ASSERT_EQ(plan->dependencies.size(), 2u);
  EXPECT_EQ(plan->dependencies[1].id, "sub");
  const ActionStep& log = std::get<ActionStep>(plan->root().body[1].op);
  const Template& message = log.inputs[0];
  ASSERT_EQ(message.kind, Template::Kind::kText);
  EXPECT_EQ(message.pills[0].root, PillRoot::kStep);
  EXPECT_EQ(message.pills[0].slot, 0u);
  EXPECT_EQ(message.pills[1].root, PillRoot::kVariable);
  EXPECT_EQ(plan->version.substr(0, 2), "f@");
  EXPECT_EQ(plan->version.size(), 2u + 8u);
}

TEST(CompilerTest, Version_ChangesWithTheFlowOrADependency_NotWithKeyOrder) {
  std::vector<Definition> defs = parse(kDefs);
  auto version = [](const std::vector<Definition>& ds) {
    MapLookup lookup(ds);
    Diagnostics d;
    std::shared_ptr<const Plan> p = Compiler(lookup, nullptr, {}).compile_flow(ds[1], &d);
    return p ? p->version : d.describe();
  };
  const std::string base = version(defs);
  std::string reordered_text = kDefs;
  std::vector<Definition> reordered = parse(R"([
    {"type": "subflow", "id": "sub", "actions": [{"inputs": {"values": {"o": 1}}, "action": "assign_outputs"}], "outputs": [{"type": "any", "name": "o"}]},
    {"id": "f", "trigger": {"type": "api"}, "variables": {"v": 0}, "actions": [
      {"id": "a", "action": "call_subflow", "inputs": {"subflow": "sub"}},
      {"id": "b", "action": "log", "inputs": {"message": "{{steps.a.o}} {{vars.v}}"}}]}])");
  EXPECT_EQ(version(reordered), base);
  std::vector<Definition> changed_sub = parse(R"([
    {"id": "sub", "type": "subflow", "outputs": [{"name": "o", "type": "any"}], "actions": [
      {"action": "assign_outputs", "inputs": {"values": {"o": 2}}}]}])");
  changed_sub.push_back(defs[1]);
  EXPECT_NE(version(changed_sub), base);
}

// "$schema" names the JSON Schema an editor checks the file with: adding, changing or
// removing it leaves the plan version as it was (docs/BEHAVIOUR.md).
TEST(CompilerTest, Version_IgnoresTheSchemaKey) {
  std::vector<Definition> defs = parse(kDefs);
  auto version = [](const std::vector<Definition>& ds) {
    MapLookup lookup(ds);
    Diagnostics d;
    std::shared_ptr<const Plan> p = Compiler(lookup, nullptr, {}).compile_flow(ds[1], &d);
    return p ? p->version : d.describe();
  };
  const std::string base = version(defs);
  std::vector<Definition> with_schema = parse(R"([
    {"$schema": "../../schemas/definition.schema.json", "id": "sub", "type": "subflow",
     "outputs": [{"name": "o", "type": "any"}], "actions": [
      {"action": "assign_outputs", "inputs": {"values": {"o": 1}}}]},
    {"$schema": "https://example.org/other.json", "id": "f", "trigger": {"type": "api"}, "variables": {"v": 0},
     "actions": [
      {"id": "a", "action": "call_subflow", "inputs": {"subflow": "sub"}},
      {"id": "b", "action": "log", "inputs": {"message": "{{steps.a.o}} {{vars.v}}"}}]}])");
  EXPECT_EQ(version(with_schema), base);
  EXPECT_EQ(with_schema[0].fingerprint, defs[0].fingerprint);
  EXPECT_EQ(with_schema[1].fingerprint, defs[1].fingerprint);
}

TEST(CompilerTest, RecursiveSubflows_CompileToOneUnitEach) {
  std::vector<Definition> defs = parse(R"([
    {"id": "even", "type": "subflow", "inputs": [{"name": "n", "type": "integer"}], "actions": [
      {"if": {"pill": "inputs.n", "op": "gt", "value": 0}, "then": [
        {"action": "call_subflow", "inputs": {"subflow": "odd", "inputs": {"n": "{{inputs.n | sub: 1}}"}}}]}]},
    {"id": "odd", "type": "subflow", "inputs": [{"name": "n", "type": "integer"}], "actions": [
      {"action": "call_subflow", "inputs": {"subflow": "even", "inputs": {"n": "{{inputs.n | sub: 1}}"}}}]},
    {"id": "f", "trigger": {"type": "api"}, "actions": [{"action": "call_subflow", "inputs": {"subflow": "even", "inputs": {"n": 4}}}]}])");
  MapLookup lookup(defs);
  Diagnostics d;
  std::shared_ptr<const Plan> plan = Compiler(lookup, nullptr, {}).compile_flow(defs[2], &d);
  ASSERT_TRUE(plan) << d.describe();
  EXPECT_EQ(plan->units.size(), 3u);
}

TEST(CompilerTest, ActionCount_CountsThroughLogic_CallsCountOne) {
  std::vector<Definition> defs = parse(kDefs);
  std::vector<Definition> more = parse(R"([{"id": "g", "trigger": {"type": "api"}, "actions": [
    {"if": {"pill": "flow.id", "op": "eq", "value": "g"}, "then": [{"action": "log", "inputs": {"message": "a"}}],
     "else": [{"for_each": [1], "do": [{"action": "log", "inputs": {"message": "b"}}, {"action": "call_subflow", "inputs": {"subflow": "sub"}}]}]},
    {"try": [{"action": "log", "inputs": {"message": "c"}}], "catch": [{"end": true}]}]}])");
  defs.push_back(more[0]);
  MapLookup lookup(defs);
  Diagnostics d;
  std::shared_ptr<const Plan> plan = Compiler(lookup, nullptr, {}).compile_flow(defs[2], &d);
  ASSERT_TRUE(plan) << d.describe();
  EXPECT_EQ(plan->root().action_count, 4u);
}

// A flow calling subflow s0, which calls s1, ... s{n-1}: n + 1 definitions, the flow last.
std::vector<Definition> call_chain(size_t n) {
  std::string text = "[";
  for (size_t i = 0; i < n; ++i) {
    text += R"({"id": "s)" + std::to_string(i) + R"(", "type": "subflow", "actions": [)";
    if (i + 1 < n) text += R"({"action": "call_subflow", "inputs": {"subflow": "s)" + std::to_string(i + 1) + R"("}})";
    text += "]},";
  }
  text += R"({"id": "f", "trigger": {"type": "api"}, "actions": [{"action": "call_subflow", "inputs": {"subflow": "s0"}}]}])";
  return parse(text);
}

// Calls nest at most kMaxCallDepth units deep, the flow's own included, as the interpreter
// runs them: a longer chain is refused where its call goes too deep, naming the chain,
// and its callers do not compile. Compiling recurses along the calls, so until 2026-12-06
// a chain of 3,000 subflows overflowed the stack (a segfault in `flowrt validate`).
TEST(CompilerTest, CallsNestAtMost64UnitsDeep_ALongerChainIsAnError_EvenThousandsLong) {
  {
    std::vector<Definition> defs = call_chain(kMaxCallDepth - 1);
    MapLookup lookup(defs);
    Diagnostics d;
    std::shared_ptr<const Plan> plan = Compiler(lookup, nullptr, {}).compile_flow(defs.back(), &d);
    ASSERT_TRUE(plan) << d.describe();
    EXPECT_EQ(plan->units.size(), kMaxCallDepth);
  }
  for (size_t n : {kMaxCallDepth, size_t{5000}}) {
    std::vector<Definition> defs = call_chain(n);
    MapLookup lookup(defs);
    Diagnostics d;
    EXPECT_FALSE(Compiler(lookup, nullptr, {}).compile_flow(defs.back(), &d));
    ASSERT_FALSE(d.empty());
    const Diagnostic& first = d.list().front();
    EXPECT_EQ(first.pointer, "/" + std::to_string(kMaxCallDepth - 2) + "/actions/0/inputs/subflow") << d.describe();
    EXPECT_EQ(first.message, "calls nested more than 64 deep (subflow 's63', called through flow 'f' -> subflow "
                             "'s0' -> subflow 's1' -> ... -> subflow 's61' -> subflow 's62')");
    EXPECT_EQ(d.list().back().message, "subflow 's0' does not compile") << "the flow, last";
  }
}

}  // namespace
}  // namespace flowrt
