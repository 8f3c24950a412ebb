// The records build_insert and build_update make from a layout (store/record_layout.h),
// against a reference that builds them field by field, member order included, for seeded
// random writes whose keys and callers vary from one write to the next, so that a layout
// kept for one combination of keys is offered to every other.
#include "store/record_layout.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "plans/time.h"
#include "plans/value_json.h"
#include "store/record_store.h"
#include "tests/support/test_support.h"

namespace flowrt {
namespace record_layout_test {
namespace {

using test_support::json;

constexpr std::string_view kStamps[] = {"sys_created_on", "sys_updated_on", "sys_mod_count", "sys_created_by",
                                        "sys_updated_by"};

bool is_stamp(std::string_view key) {
  for (std::string_view s : kStamps) {
    if (key == s) return true;
  }
  return false;
}

bool is_engine_field(std::string_view key) { return key == "sys_id" || is_stamp(key); }

// What build_insert makes, member by member; `sys_id` the one the store gives.
Value reference_insert(const Value& values, const Value& sys_id, const Value& stamp, const Value& by) {
  std::vector<std::pair<std::string, Value>> fields{{"sys_id", sys_id}};
  for (const auto& m : values.members()) {
    if (!is_engine_field(m.key.as_string())) fields.emplace_back(std::string(m.key.as_string()), m.value);
  }
  fields.emplace_back("sys_created_on", stamp);
  fields.emplace_back("sys_updated_on", stamp);
  fields.emplace_back("sys_mod_count", Value(0));
  if (by.is_string()) {
    fields.emplace_back("sys_created_by", by);
    fields.emplace_back("sys_updated_by", by);
  }
  ObjectBuilder b(fields.size());
  for (auto& [k, v] : fields) b.add(Value(std::string_view(k)), v);
  return b.build();
}

// What build_update makes, member by member, and whether a value changed.
Value reference_update(const Value& previous, const Value& patch, const Value& stamp, const Value& by, bool* changed) {
  std::vector<std::pair<std::string, Value>> fields;
  *changed = false;
  for (const auto& m : previous.members()) {
    const std::string_view key = m.key.as_string();
    if (is_stamp(key)) continue;
    const Value* p = key == "sys_id" ? nullptr : patch.find(key);
    if (p && !(*p == m.value)) *changed = true;
    fields.emplace_back(std::string(key), p ? *p : m.value);
  }
  for (const auto& m : patch.members()) {
    const std::string_view key = m.key.as_string();
    if (is_engine_field(key) || previous.contains(key)) continue;
    if (!m.value.is_null()) *changed = true;
    fields.emplace_back(std::string(key), m.value);
  }
  fields.emplace_back("sys_created_on", previous["sys_created_on"]);
  fields.emplace_back("sys_updated_on", stamp);
  fields.emplace_back("sys_mod_count", Value(static_cast<long long>(previous["sys_mod_count"].as_int() + 1)));
  if (const Value* c = previous.find("sys_created_by")) fields.emplace_back("sys_created_by", *c);
  if (by.is_string()) fields.emplace_back("sys_updated_by", by);
  ObjectBuilder b(fields.size());
  for (auto& [k, v] : fields) b.add(Value(std::string_view(k)), v);
  return b.build();
}

// An object of a few keys drawn from a small pool (engine fields among them), in a random
// order, built either as pairs or on a shape, as writes from C++ and from JSON are.
Value random_object(std::mt19937_64& rng, bool allow_sys_id) {
  static const char* kPool[] = {"a", "b", "c", "d", "sys_created_by", "sys_mod_count", "sys_updated_on"};
  std::vector<std::string> keys;
  for (const char* k : kPool) {
    if (rng() % 3 == 0) keys.emplace_back(k);
  }
  if (allow_sys_id && rng() % 4 == 0) keys.emplace_back("sys_id");
  std::shuffle(keys.begin(), keys.end(), rng);
  std::vector<Value> values;
  for (const std::string& k : keys) {
    const uint64_t pick = rng() % 4;
    if (pick == 0) {
      values.emplace_back();
    } else if (k == "sys_id") {  // a given id is a string (else the insert is refused)
      values.emplace_back(std::string_view("given-" + std::to_string(rng() % 1000)));
    } else if (pick == 1) {
      values.emplace_back(static_cast<long long>(rng() % 3));
    } else {
      values.emplace_back(std::string_view("s" + std::to_string(rng() % 3)));
    }
  }
  if (rng() % 2 == 0) {
    ObjectBuilder b(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) b.add(Value(std::string_view(keys[i])), values[i]);
    return b.build();
  }
  std::vector<Value> key_values;
  for (const std::string& k : keys) key_values.emplace_back(std::string_view(k));
  ObjectBuilder b(record_layout::record_shape(key_values));
  for (Value& v : values) b.add_value(std::move(v));
  return b.build();
}

TEST(RecordLayoutTest, InsertsAndUpdatesOfVaryingKeys_BuildWhatTheReferenceBuilds_MemberOrderIncluded) {
  std::mt19937_64 rng(20261207);
  RecordStore store;
  const Value callers[] = {Value(), Value("alice"), Value("bob")};
  std::vector<Value> records;
  for (int i = 0; i < 4000; ++i) {
    const Value& by = callers[rng() % 3];
    const TimeMs now = 1000 + i;
    const Value stamp(std::string_view(format_time(now)));
    if (records.empty() || rng() % 3 == 0) {
      const Value values = random_object(rng, /*allow_sys_id=*/true);
      Result<Value> built = store.build_insert(values, now, nullptr, by);
      ASSERT_TRUE(built.is_ok()) << built.error().message;
      const Value* given = values.find("sys_id");
      const Value& sys_id = (given && !given->is_null()) ? *given : (*built)["sys_id"];
      ASSERT_EQ(built->to_json(), reference_insert(values, sys_id, stamp, by).to_json()) << "insert of " << values.to_json();
      records.push_back(*built);
      continue;
    }
    const Value previous = records[rng() % records.size()];
    const std::string sys_id(previous["sys_id"].as_string());
    const Value patch = random_object(rng, /*allow_sys_id=*/false);
    bool changed = false;
    const Value expected = reference_update(previous, patch, stamp, by, &changed);
    Result<RecordChange> built = RecordStore::build_update(previous, sys_id, patch, now, by);
    ASSERT_TRUE(built.is_ok()) << built.error().message;
    ASSERT_EQ(built->record.to_json(), expected.to_json()) << "update of " << previous.to_json() << " by " << patch.to_json();
    ASSERT_EQ(built->changed, changed) << "update of " << previous.to_json() << " by " << patch.to_json();
    records.push_back(built->record);
  }
}

// The same keys in another order are another layout; a patch that names the record's own
// sys_id is accepted, another one refused, whichever layout was kept before.
TEST(RecordLayoutTest, KeyOrderAndTheGivenSysId_AreTheWritesOwn) {
  RecordStore store;
  const Value ab = *store.build_insert(json(R"({"a": 1, "b": 2})"), 1000, nullptr);
  const Value ba = *store.build_insert(json(R"({"b": 2, "a": 1})"), 1000, nullptr);
  EXPECT_EQ(ab.members()[1].key, Value("a"));
  EXPECT_EQ(ba.members()[1].key, Value("b"));
  const std::string id(ab["sys_id"].as_string());
  EXPECT_TRUE(RecordStore::build_update(ab, id, json(R"({"sys_id": ")" + id + R"(", "a": 5})"), 2000).is_ok());
  const Result<RecordChange> other = RecordStore::build_update(ab, id, json(R"({"sys_id": "x", "a": 5})"), 2000);
  ASSERT_FALSE(other.is_ok());
  EXPECT_EQ(other.error().message, "sys_id cannot be changed");
  EXPECT_TRUE(RecordStore::build_update(ab, id, json(R"({"a": 6, "sys_id": ")" + id + R"("})"), 2000).is_ok());
}

}  // namespace
}  // namespace record_layout_test
}  // namespace flowrt
