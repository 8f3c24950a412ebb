// Checking with a CheckMemo reports exactly what compiling each definition does.
//
// Seeded random call graphs (chains past the call depth limit, cycles, missing callees,
// drafts, units with errors of their own) are checked one definition after another, in a
// shuffled order, once by compiling each with everything it uses (Compiler::compile_unit)
// and once with one memo for them all (Compiler::check_unit): the diagnostics must be the
// same, in the same order, and each definition must compile in both or in neither.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "compiler/loader.h"
#include "tests/compiler/map_lookup.h"

namespace flowrt {
namespace {

using test_compiler::MapLookup;

// Units u0..u(n-1) in groups of 10 to 99 (each group a chain, so some run deeper than
// the call depth limit): subflows, one in five an action definition (called by name),
// each calling the next of its group and a few later ones, now and then an earlier one (a
// cycle); rarely one that does not exist, a draft, or a unit with an error of its own.
// A few flows call into them.
std::string random_definitions(uint32_t seed) {
  std::mt19937 rng(seed);
  const int n = 150;
  std::vector<int> group_end(n);  // one past the last unit of i's group
  for (int start = 0; start < n;) {
    const int end = std::min(n, start + 10 + static_cast<int>(rng() % 90));
    for (int i = start; i < end; ++i) group_end[i] = end;
    start = end;
  }
  auto is_action = [](int i) { return i % 5 == 4; };
  auto call = [&](int callee) {
    const std::string id = "u" + std::to_string(callee);
    if (is_action(callee)) return R"({"action": ")" + id + R"("})";
    return R"({"action": "call_subflow", "inputs": {"subflow": ")" + id + R"("}})";
  };
  std::string out = "[";
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> steps;
    const int end = group_end[i];
    if (i + 1 < end) steps.push_back(call(i + 1));
    const int extra = static_cast<int>(rng() % 3);
    for (int k = 0; k < extra; ++k) {
      const unsigned pick = rng() % 10;
      if (pick < 6 && i + 2 < end) steps.push_back(call(i + 2 + static_cast<int>(rng() % std::min(8, end - i - 2))));
      if (pick == 6 && i > 0 && group_end[i - 1] == end) steps.push_back(call(i - 1));
    }
    if (rng() % 97 == 0) steps.push_back(R"({"action": "call_subflow", "inputs": {"subflow": "missing"}})");
    if (rng() % 89 == 0) steps.push_back(R"({"action": "no_such_action"})");
    if (rng() % 83 == 0) steps.push_back(R"({"action": "log", "inputs": {"message": "{{nope.x}}"}})");
    std::string def = R"({"id": "u)" + std::to_string(i) + R"(", "type": ")" + (is_action(i) ? "action" : "subflow") +
                      "\"";
    if (rng() % 101 == 0) def += R"(, "status": "draft")";
    def += R"(, "actions": [)";
    for (size_t s = 0; s < steps.size(); ++s) def += (s ? ", " : "") + steps[s];
    if (steps.empty()) def += R"({"action": "log", "inputs": {"message": "leaf"}})";
    def += "]}";
    out += (i ? ",\n" : "\n") + def;
  }
  for (int f = 0; f < 4; ++f) {
    out += ",\n{\"id\": \"f" + std::to_string(f) + R"(", "trigger": {"type": "api"}, "actions": [)" +
           call(static_cast<int>(rng() % n)) + "]}";
  }
  return out + "]";
}

std::vector<Definition> parse_all(const std::string& text) {
  Diagnostics d;
  std::vector<Definition> out;
  parse_definitions(text, "g.json", &out, &d);
  EXPECT_TRUE(d.empty()) << d.describe();
  return out;
}

TEST(CheckMemoTest, CheckingWithAMemo_ReportsWhatCompilingEachDefinitionDoes_OverRandomCallGraphs) {
  size_t failing = 0, deep = 0, memoized = 0, total_defs = 0;
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    const std::vector<Definition> defs = parse_all(random_definitions(seed));
    ASSERT_EQ(defs.size(), 154u);
    MapLookup lookup(defs);
    std::vector<const Definition*> order;
    for (const auto& [key, def] : lookup.defs_) order.push_back(&def);
    std::shuffle(order.begin(), order.end(), std::mt19937(seed));
    for (bool drafts : {false, true}) {
      CompileOptions options;
      options.allow_draft_dependencies = drafts;
      Compiler compiler(lookup, nullptr, options);
      Diagnostics compiled, checked;
      CheckMemo memo;
      for (const Definition* def : order) {
        const bool compiles = compiler.compile_unit(*def, &compiled) != nullptr;
        ASSERT_EQ(compiler.check_unit(*def, &checked, &memo), compiles) << "seed " << seed << ", " << def->label();
        failing += compiles ? 0 : 1;
        ++total_defs;
      }
      ASSERT_EQ(checked.size(), compiled.size()) << "seed " << seed;
      for (size_t i = 0; i < compiled.list().size(); ++i) {
        ASSERT_EQ(checked.list()[i].describe(), compiled.list()[i].describe()) << "seed " << seed << ", error " << i;
        if (compiled.list()[i].message.find("nested more than") != std::string::npos) ++deep;
      }
      memoized += memo.clean_units();
    }
  }
  // The graphs did reach what the memo must get right: units known clean reached again,
  // calls nested too deep from some roots only, definitions that fail and ones that do not.
  EXPECT_GT(memoized, 600u);
  EXPECT_GT(deep, 200u);
  EXPECT_GT(failing, 500u);
  EXPECT_GT(total_defs - failing, 500u);
}

}  // namespace
}  // namespace flowrt
