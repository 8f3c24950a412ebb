#include "triggers/trigger_index.h"

#include <gtest/gtest.h>

#include "compiler/compiler.h"
#include "plans/value_json.h"

namespace flowrt {
namespace {

std::shared_ptr<const TriggerSpec> spec(std::string_view json) {
  auto s = std::make_shared<TriggerSpec>();
  Diagnostics d;
  EXPECT_TRUE(compile_trigger(*parse_json(json), "t", "", s.get(), &d)) << d.describe();
  return s;
}

TEST(TriggerIndexTest, RecordTriggers_IndexedByTableAndOperation) {
  TriggerIndex index;
  index.add(TriggerEntry{1, nullptr, "ins", spec(R"({"type": "record", "table": "a", "when": "created"})")});
  index.add(TriggerEntry{2, nullptr, "both", spec(R"({"type": "record", "table": "a", "when": "created_or_updated"})")});
  index.add(TriggerEntry{3, nullptr, "del", spec(R"({"type": "record", "table": "b", "when": "deleted"})")});
  index.add(TriggerEntry{4, nullptr, "ev", spec(R"({"type": "event", "name": "x"})")});
  index.add(TriggerEntry{5, nullptr, "sch", spec(R"({"type": "schedule", "every": "1h"})")});
  EXPECT_EQ(index.on_record("a", RecordOperation::kInsert).size(), 2u);
  EXPECT_EQ(index.on_record("a", RecordOperation::kUpdate).size(), 1u);
  EXPECT_EQ(index.on_record("a", RecordOperation::kDelete).size(), 0u);
  EXPECT_EQ(index.on_record("b", RecordOperation::kDelete).size(), 1u);
  EXPECT_EQ(index.on_record("zzz", RecordOperation::kInsert).size(), 0u);
  EXPECT_EQ(index.on_event("x").size(), 1u);
  EXPECT_EQ(index.schedules().size(), 1u);
  EXPECT_EQ(index.size(), 5u);
}

TEST(TriggerIndexTest, Matches_ConditionAndNoChangeRule) {
  auto s = spec(R"({"type": "record", "table": "a", "when": "updated", "condition": {"field": "p", "op": "le", "value": 2}})");
  Value rec = *parse_json(R"({"p": 1})");
  Value prev = *parse_json(R"({"p": 5})");
  EXPECT_TRUE(record_trigger_matches(*s, RecordOperation::kUpdate, rec, &prev, true));
  EXPECT_FALSE(record_trigger_matches(*s, RecordOperation::kUpdate, rec, &prev, false)) << "no value changed";
  EXPECT_FALSE(record_trigger_matches(*s, RecordOperation::kInsert, rec, nullptr, true));
  auto every = spec(R"({"type": "record", "table": "a", "when": "updated", "run": "for_every_update"})");
  EXPECT_TRUE(record_trigger_matches(*every, RecordOperation::kUpdate, rec, &prev, false));
}

}  // namespace
}  // namespace flowrt
