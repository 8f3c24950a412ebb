#include "store/record_store.h"

#include <gtest/gtest.h>

#include "compiler/compiler.h"
#include "plans/value_json.h"
#include "tests/support/test_support.h"

namespace flowrt {
namespace {

using namespace flowrt::test_support;


Condition where(std::string_view t) {
  Condition c;
  Diagnostics d;
  EXPECT_TRUE(compile_record_condition(json(t), "t", "", &c, &d)) << d.describe();
  return c;
}

TEST(RecordStoreTest, InsertUpdateRemove_KeepEngineFields) {
  RecordStore store;
  Value r = *store.insert("t", json(R"({"a": 1})"), 1000);
  const std::string id(r["sys_id"].as_string());
  EXPECT_EQ(id.size(), 32u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
  RecordChange c = *store.update("t", id, json(R"({"a": 2, "b": null})"), 2000);
  EXPECT_TRUE(c.changed);
  EXPECT_EQ(c.previous["a"], Value(1));
  EXPECT_EQ(c.record["sys_mod_count"], Value(1));
  EXPECT_EQ(c.record["sys_updated_on"], Value("1970-01-01T00:00:02.000Z"));
  EXPECT_EQ(c.record["sys_created_on"], Value("1970-01-01T00:00:01.000Z"));
  EXPECT_FALSE(store.update("t", id, json(R"({"a": 2})"), 3000)->changed);
  EXPECT_FALSE(store.update("t", id, json(R"({"sys_id": "other"})"), 3000).is_ok());
  EXPECT_EQ((*store.remove("t", id))["a"], Value(2));
  EXPECT_TRUE(store.get("t", id).is_null());
  EXPECT_FALSE(store.remove("t", id).is_ok());
}

// A durable store finds a record by its position (RecordPut::position): each record keeps
// the one it was inserted at, through updates, the compaction that many removes bring, and
// a restore.
TEST(RecordStoreTest, EachRecordKeepsItsPosition_ThroughUpdatesRemovesCompactionAndRestore) {
  RecordStore store;
  constexpr uint64_t kCount = 3000;
  for (uint64_t i = 1; i <= kCount; ++i) {
    Result<Value> built = store.build_insert(Value::object({{"sys_id", Value("r" + std::to_string(i))}}), 1000);
    ASSERT_TRUE(built.is_ok());
    ASSERT_TRUE(*store.commit_insert("t", *built, 0, 10 * i));  // positions 10, 20, ...
  }
  // Removing most of them compacts the table's rows (past 1,024 rows, fewer than half live).
  for (uint64_t i = 1; i <= kCount; ++i) {
    if (i % 5 == 0) continue;
    uint64_t position = 0;
    ASSERT_TRUE(store.remove("t", "r" + std::to_string(i), &position).is_ok());
    ASSERT_EQ(position, 10 * i);
  }
  for (uint64_t i = 5; i <= kCount; i += 5) {
    const std::string id = "r" + std::to_string(i);
    Result<RecordChange> change = RecordStore::build_update(store.get("t", id), id, json(R"({"n": 1})"), 2000);
    ASSERT_TRUE(change.is_ok());
    uint64_t position = 0;
    ASSERT_TRUE(store.commit_update("t", id, *change, &position));
    EXPECT_EQ(position, 10 * i) << id;
  }
  // Restored with the positions a store gives back, updates find them again.
  RecordStore restored;
  restored.restore(0, 0, {{"t", {json(R"({"sys_id": "a"})"), json(R"({"sys_id": "b"})")}, {70, 90}}});
  Result<RecordChange> change = RecordStore::build_update(restored.get("t", "b"), "b", json(R"({"n": 1})"), 2000);
  ASSERT_TRUE(change.is_ok());
  uint64_t position = 0;
  ASSERT_TRUE(restored.commit_update("t", "b", *change, &position));
  EXPECT_EQ(position, 90u);
}

// Records read back from a store as key/value pairs take the table's shared key list again,
// as when they were written (half the memory per field), and read the same.
TEST(RecordStoreTest, RestoredRecords_ShareTheirTablesKeyList) {
  const Value a = json(R"({"sys_id": "a", "n": 1, "sys_mod_count": 0})");
  const Value b = json(R"({"sys_id": "b", "n": 2, "sys_mod_count": 3})");
  ASSERT_TRUE(a.shape().is_null()) << "parsed as pairs";
  RecordStore restored;
  restored.restore(0, 0, {{"t", {a, b}, {1, 2}}});
  const Value ra = restored.get("t", "a"), rb = restored.get("t", "b");
  EXPECT_EQ(ra, a);
  EXPECT_EQ(rb, b);
  EXPECT_EQ(ra.to_json(), a.to_json()) << "the same fields in the same order";
  ASSERT_FALSE(ra.shape().is_null());
  EXPECT_TRUE(ra.shape().same_storage(rb.shape()));
}

TEST(RecordStoreTest, CommitUpdate_RowHintIsOnlyAHint) {
  RecordStore store;
  const std::string a(store.insert("t", json(R"({"n": 1})"), 1000)->operator[]("sys_id").as_string());
  const std::string b(store.insert("t", json(R"({"n": 2})"), 1000)->operator[]("sys_id").as_string());
  uint32_t row_a = 0, row_b = 0;
  const Value read_a = store.get("t", a, &row_a);
  store.get("t", b, &row_b);
  ASSERT_NE(row_a, row_b);

  // A hint at another record's row, or past the end: the record is found by its sys_id.
  RecordChange c = *RecordStore::build_update(read_a, a, json(R"({"n": 10})"), 2000);
  c.row_hint = row_b;
  ASSERT_TRUE(store.commit_update("t", a, c));
  EXPECT_EQ(store.get("t", a)["n"], Value(10));
  EXPECT_EQ(store.get("t", b)["n"], Value(2)) << "the hinted row is left alone";

  // A right hint at a version that is no longer current: refused, as without a hint.
  RecordChange stale = *RecordStore::build_update(read_a, a, json(R"({"n": 20})"), 3000);
  stale.row_hint = row_a;
  EXPECT_FALSE(store.commit_update("t", a, stale));
  stale.row_hint = 1u << 30;
  EXPECT_FALSE(store.commit_update("t", a, stale));
  EXPECT_EQ(store.get("t", a)["n"], Value(10));

  // The record removed: refused whatever the hint.
  const Value read_b = store.get("t", b);
  RecordChange gone = *RecordStore::build_update(read_b, b, json(R"({"n": 30})"), 4000);
  gone.row_hint = row_b;
  ASSERT_TRUE(store.remove("t", b).is_ok());
  EXPECT_FALSE(store.commit_update("t", b, gone));
}

// get's RowHint (a context's trigger record) reads the hinted row only when it holds the
// very version hinted, of the record asked for; any other hint reads what no hint reads.
TEST(RecordStoreTest, Get_RowHintIsOnlyAHint) {
  RecordStore store;
  Result<Value> built_a = store.build_insert(json(R"({"sys_id": "a", "n": 1})"), 1000);
  Result<Value> built_b = store.build_insert(json(R"({"sys_id": "b", "n": 2})"), 1000);
  ASSERT_TRUE(built_a.is_ok() && built_b.is_ok());
  uint32_t row_a = UINT32_MAX, row_b = UINT32_MAX;
  ASSERT_TRUE(*store.commit_insert("t", *built_a, 0, 1, &row_a));
  ASSERT_TRUE(*store.commit_insert("t", *built_b, 0, 2, &row_b));
  ASSERT_NE(row_a, row_b);
  const Value version_a = store.get("t", "a");
  const Value version_b = store.get("t", "b");

  // The right hint: that row, that record.
  uint32_t row = UINT32_MAX;
  EXPECT_TRUE(store.get("t", "a", &row, RowHint{row_a, &version_a}).same_storage(version_a));
  EXPECT_EQ(row, row_a);
  // Another record's row and version, or a row past the end: the record asked for.
  EXPECT_EQ(store.get("t", "a", &row, RowHint{row_b, &version_b})["n"], Value(1));
  EXPECT_EQ(row, row_a);
  EXPECT_EQ(store.get("t", "a", &row, RowHint{1u << 30, &version_a})["n"], Value(1));
  // The hinted version on another table's row of the same number: not that table's record.
  Result<Value> built_c = store.build_insert(json(R"({"sys_id": "a", "n": 3})"), 1000);
  ASSERT_TRUE(*store.commit_insert("u", *built_c, 0, 3));
  EXPECT_EQ(store.get("u", "a", nullptr, RowHint{row_a, &version_a})["n"], Value(3));

  // The record updated since: the new version, not the hinted one.
  uint32_t updated_row = UINT32_MAX;
  RecordChange change = *RecordStore::build_update(version_a, "a", json(R"({"n": 10})"), 2000);
  ASSERT_TRUE(store.commit_update("t", "a", change, nullptr, &updated_row));
  EXPECT_EQ(updated_row, row_a);
  EXPECT_EQ(store.get("t", "a", nullptr, RowHint{row_a, &version_a})["n"], Value(10));

  // The record removed: null, also with a null version hinted at its emptied row.
  ASSERT_TRUE(store.remove("t", "b").is_ok());
  EXPECT_TRUE(store.get("t", "b", nullptr, RowHint{row_b, &version_b}).is_null());
  const Value none;
  EXPECT_TRUE(store.get("t", "b", nullptr, RowHint{row_b, &none}).is_null());

  // Rows moved by the compaction that many removes bring: r1..r500 and r601..r1601 removed
  // (past 1,024 rows, fewer than half live), r600 moves from row 599 to row 99, and row 599
  // holds r2101: the hinted row is not the answer.
  RecordStore moved;
  std::vector<Value> versions;
  for (int i = 1; i <= 3000; ++i) {
    Result<Value> built = moved.build_insert(Value::object({{"sys_id", Value("r" + std::to_string(i))}}), 1000);
    ASSERT_TRUE(built.is_ok() && *moved.commit_insert("t", *built, 0, i));
    versions.push_back(*built);
  }
  for (int i = 1; i <= 1601; ++i) {
    if (i <= 500 || i > 600) {
      ASSERT_TRUE(moved.remove("t", "r" + std::to_string(i)).is_ok());
    }
  }
  uint32_t now_at = UINT32_MAX;
  ASSERT_EQ(moved.get("t", "r2101", &now_at)["sys_id"], Value("r2101"));
  ASSERT_EQ(now_at, 599u) << "the compaction moved the rows as this test expects";
  EXPECT_EQ(moved.get("t", "r600", &now_at, RowHint{599, &versions[599]})["sys_id"], Value("r600"));
  EXPECT_EQ(now_at, 99u);
}

TEST(RecordStoreTest, SysIds_AreDeterministicForASeed) {
  RecordStore a(7), b(7), c(8);
  const Value x = (*a.insert("t", Value(), 0))["sys_id"];
  EXPECT_EQ(x, (*b.insert("t", Value(), 0))["sys_id"]);
  EXPECT_FALSE(x == (*c.insert("t", Value(), 0))["sys_id"]);
}

TEST(RecordStoreTest, Find_UsesIndexAndStaysCorrectAcrossWrites) {
  RecordStore store;
  std::vector<std::string> ids;
  for (int i = 0; i < 100; ++i) {
    ids.emplace_back((*store.insert("u", Value::object({{"g", Value(i % 7)}, {"i", Value(i)}}), 0))["sys_id"].as_string());
  }
  Condition c = where(R"({"field": "g", "op": "eq", "value": 3})");
  RecordQuery q;
  q.table = "u";
  q.condition = &c;
  EXPECT_EQ(store.find(q)->size(), 14u);  // 3, 10, ..., 94
  ASSERT_TRUE(store.update("u", ids[3], json(R"({"g": 4})"), 0).is_ok());
  ASSERT_TRUE(store.remove("u", ids[10]).is_ok());
  ASSERT_TRUE(store.insert("u", json(R"({"g": 3.0})"), 0).is_ok());
  Value found = *store.find(q);
  EXPECT_EQ(found.size(), 13u);
  EXPECT_EQ(found.at(0)["i"], Value(17)) << "insertion order";
  q.limit = 2;
  EXPECT_EQ(store.find(q)->size(), 2u);
  q.order_by = "-i";
  EXPECT_EQ(store.find(q)->at(0)["i"], Value(94));
}

TEST(RecordStoreTest, ManyDeletes_CompactTheTable) {
  RecordStore store;
  std::vector<std::string> ids;
  for (int i = 0; i < 3000; ++i) ids.emplace_back((*store.insert("t", Value::object({{"i", Value(i)}}), 0))["sys_id"].as_string());
  Condition c = where(R"({"field": "i", "op": "ge", "value": 0})");
  for (int i = 0; i < 2500; ++i) ASSERT_TRUE(store.remove("t", ids[i]).is_ok());
  EXPECT_EQ(store.records("t").size(), 500u);
  EXPECT_EQ(store.records("t").front()["i"], Value(2500));
  EXPECT_EQ(store.get("t", ids[2999])["i"], Value(2999));
  RecordQuery q;
  q.table = "t";
  q.condition = &c;
  EXPECT_EQ(store.find(q)->size(), 500u);
}

TEST(RecordStoreTest, OrderValues_IsATotalOrder) {
  EXPECT_LT(order_values(Value(), Value(false)), 0);
  EXPECT_LT(order_values(Value(1), Value(1.5)), 0);
  EXPECT_LT(order_values(Value(9), Value("1")), 0);
  EXPECT_EQ(order_values(Value("a"), Value("a")), 0);
}

}  // namespace
}  // namespace flowrt
