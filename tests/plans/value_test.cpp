#include "plans/value.h"
#include "plans/value_json.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace flowrt {
namespace {

TEST(ValueTest, Scalars_HaveTheirTypesAndValues) {
  EXPECT_TRUE(Value().is_null());
  EXPECT_TRUE(Value(true).as_bool());
  EXPECT_EQ(Value(42).as_int(), 42);
  EXPECT_EQ(Value(2.5).as_double(), 2.5);
  EXPECT_EQ(Value("hi").as_string(), "hi");
  EXPECT_TRUE(Value("x").is_string()) << "a string literal is a string, not a bool";
  EXPECT_EQ(Value(7).as_double(), 7.0);
}

TEST(ValueTest, Strings_InlineAndHeap_CompareByContent) {
  const std::string long_text(100, 'z');
  Value small("fourteen chars"), big(long_text);
  EXPECT_EQ(small.as_string(), "fourteen chars");
  EXPECT_EQ(big.as_string(), long_text);
  Value copy = big;
  EXPECT_TRUE(copy.same_storage(big));
  EXPECT_EQ(copy, Value(long_text));
  EXPECT_EQ(Value(""), Value(std::string_view()));
}

TEST(ValueTest, Equality_NumbersByValue_ObjectsIgnoreOrder_TypesNeverMix) {
  EXPECT_EQ(Value(1), Value(1.0));
  EXPECT_FALSE(Value(1) == Value("1"));
  EXPECT_FALSE(Value() == Value(false));
  EXPECT_EQ(Value::object({{"a", Value(1)}, {"b", Value(2)}}), Value::object({{"b", Value(2)}, {"a", Value(1)}}));
  EXPECT_FALSE(Value::array({Value(1), Value(2)}) == Value::array({Value(2), Value(1)}));
}

TEST(ValueTest, Objects_LookUpMergeAndWithout_LeaveOriginalUntouched) {
  Value o = Value::object({{"a", Value(1)}, {"b", Value("x")}});
  EXPECT_EQ(o["a"], Value(1));
  EXPECT_TRUE(o["missing"].is_null());
  EXPECT_EQ(o.find("missing"), nullptr);
  Value merged = o.merged(Value::object({{"b", Value("y")}, {"c", Value(true)}}));
  EXPECT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged.members()[1].key.as_string(), "b") << "existing keys keep their place";
  EXPECT_EQ(merged["b"], Value("y"));
  EXPECT_EQ(o["b"], Value("x"));
  EXPECT_EQ(o.with("a", Value(9))["a"], Value(9));
  EXPECT_FALSE(o.without("a").contains("a"));
}

TEST(ValueTest, Objects_DuplicateKeys_LastWins) {
  Value o = Value::object({{"k", Value(1)}, {"k", Value(2)}});
  EXPECT_EQ(o.size(), 1u);
  EXPECT_EQ(o["k"], Value(2));
}

TEST(ValueTest, LargeObjects_AreIndexed) {
  std::vector<Member> m;
  for (int i = 0; i < 1000; ++i) m.push_back(Member{Value(std::string_view("k" + std::to_string(i))), Value(i)});
  Value o = Value::object(std::move(m));
  EXPECT_EQ(o["k777"], Value(777));
  EXPECT_EQ(o.merged(Value::object({{"k5", Value(-5)}}))["k5"], Value(-5));
}

TEST(ValueTest, SharedValues_CopyAndDestroyAcrossThreads) {
  Value shared = Value::object({{"list", Value::array({Value(std::string(40, 'q')), Value(1)})}});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&shared] {
      for (int i = 0; i < 10000; ++i) {
        Value copy = shared;
        Value inner = copy["list"];
        ASSERT_EQ(inner.size(), 2u);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(shared["list"].at(1), Value(1));
}

// Keys may hold NUL bytes (JSON's \u0000): the key list ["a\0b"] is not ["a", "b"]. Until
// 2026-12-06 the registry joined keys with NUL bytes, so the two shared one shape: an
// object built on the one-key shape with two values wrote past it (a crash), and records
// read their values under the wrong keys.
TEST(ValueTest, InternedShapes_KeysWithNulBytes_AreTheirOwnShape) {
  const Value one = intern_shape(std::vector<Value>{Value(std::string_view("a\0b", 3))});
  const Value two = intern_shape({"a", "b"});
  EXPECT_EQ(one.size(), 1u);
  EXPECT_EQ(two.size(), 2u);
  EXPECT_FALSE(one.same_storage(two));
  const Value three = intern_shape(std::vector<Value>{Value(std::string_view("a\0", 2)), Value("b")});
  EXPECT_EQ(three.size(), 2u);
  EXPECT_FALSE(three.same_storage(two));
  Result<Value> nul = parse_json(R"({"a\u0000b": 1})");
  Result<Value> pair = parse_json(R"({"a": 1, "b": 2})");
  ASSERT_TRUE(nul.is_ok() && pair.is_ok());
  EXPECT_EQ(pair->to_json(), R"({"a":1,"b":2})");
  EXPECT_EQ(nul->to_json(), R"({"a\u0000b":1})");
}

TEST(ValueTest, InternedShapes_OnePerKeyList_SharedByTheObjectsBuiltFromThem) {
  const std::string long_key(40, 'k');  // long enough to be a heap string
  const Value a = intern_shape({"number", "state", long_key});
  const Value b = intern_shape(std::vector<Value>{Value("number"), Value("state"), Value(std::string_view(long_key))});
  EXPECT_TRUE(a.same_storage(b));
  EXPECT_FALSE(a.same_storage(intern_shape({"state", "number", long_key})));  // order matters
  EXPECT_EQ(a, Value::array({"number", "state", long_key}));
  EXPECT_TRUE(intern_shape(std::vector<Value>{}).is_array());

  // Objects built from it, on several threads, read back intact after the builders are gone.
  std::vector<std::thread> threads;
  std::vector<Value> built(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        ObjectBuilder o(intern_shape({"number", "state", long_key}));
        o.add_value(Value(i));
        o.add_value(Value("new"));
        o.add_value(Value(t));
        Value v = o.build();
        Value copy = v;
        if (i == 1999) built[static_cast<size_t>(t)] = copy;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 4; ++t) {
    EXPECT_EQ(built[static_cast<size_t>(t)][long_key], Value(t));
    EXPECT_TRUE(built[static_cast<size_t>(t)].shape().same_storage(a));
  }
}

TEST(ValueTest, InternedShapes_PastTheLimit_AreOrdinaryArrays) {
  // Fill the registry (it is process-wide, so other tests may have added some already).
  for (size_t i = 0; i <= kMaxInternedShapes; ++i) intern_shape({"filler", std::to_string(i)});
  const Value a = intern_shape({"past", "the", "limit"});
  const Value b = intern_shape({"past", "the", "limit"});
  EXPECT_EQ(a, b);
  EXPECT_FALSE(a.same_storage(b));  // each call made its own, freed like any value
  ObjectBuilder o(a);
  o.add_value(Value(1));
  o.add_value(Value(2));
  o.add_value(Value(3));
  EXPECT_EQ(o.build()["limit"], Value(3));
}

// Values nested a million deep, built in C++ (the JSON parser stops at max_json_depth; the
// library API does not). Until 2026-12-06 freeing one recursed once per level and
// overflowed the stack. Built and read in loops: comparing or writing one would recurse.
constexpr int kDeep = 1000000;

Value nest_in_arrays(Value inner, int levels) {
  for (int i = 0; i < levels; ++i) inner = Value::array({inner});
  return inner;
}

// How many one-element arrays wrap the innermost value, and that value.
std::pair<int, Value> unwrap_arrays(const Value& v) {
  const Value* at = &v;
  int levels = 0;
  for (; at->is_array() && at->size() == 1; ++levels) at = &at->at(0);
  return {levels, *at};
}

const std::string kLongLeaf(40, 'x');  // a heap string: one more node to free

TEST(ValueTest, Destroying_ArraysNestedAMillionDeep_DoesNotOverflowTheStack) {
  Value deep = nest_in_arrays(Value(kLongLeaf), kDeep);
  EXPECT_EQ(unwrap_arrays(deep).first, kDeep);
  deep = Value();
  EXPECT_TRUE(deep.is_null());
}

TEST(ValueTest, Destroying_ObjectsNestedAMillionDeep_DoesNotOverflowTheStack) {
  Value pairs(kLongLeaf);
  for (int i = 0; i < kDeep; ++i) pairs = Value::object({{"next", pairs}});
  EXPECT_FALSE(pairs.shape().is_array());  // pairs: no shape
  pairs = Value();

  // Shaped: on an interned shape (never counted), and on a counted one that the last
  // object frees (its key is long, a heap string freed with it).
  const Value interned = intern_shape({"next"});
  Value shaped(kLongLeaf);
  for (int i = 0; i < kDeep; ++i) shaped = Value::object(interned, {shaped});
  EXPECT_TRUE(shaped.shape().same_storage(interned));
  shaped = Value();

  Value counted_shape = Value::array({std::string(40, 'k')});
  Value counted(kLongLeaf);
  for (int i = 0; i < kDeep; ++i) counted = Value::object(counted_shape, {counted});
  EXPECT_TRUE(counted.shape().same_storage(counted_shape));
  counted_shape = Value();
  counted = Value();
  EXPECT_TRUE(counted.is_null());
}

// Many nodes at once on the worklist, past the slots it keeps on the stack: the whole
// first level of branches, then each branch's remaining levels. (ASan: each freed once.)
TEST(ValueTest, Destroying_AThousandBranchesAThousandDeep_FreesEveryNodeOnce) {
  ArrayBuilder branches(1000);
  for (int i = 0; i < 1000; ++i) {
    branches.add(i % 2 == 0 ? nest_in_arrays(Value(kLongLeaf), 1000)
                            : Value::object({{"branch", nest_in_arrays(Value(i), 1000)}}));
  }
  Value tree = branches.build();
  EXPECT_EQ(unwrap_arrays(tree.at(998)).first, 1000);
  tree = Value();
  EXPECT_TRUE(tree.is_null());
}

TEST(ValueTest, Destroying_ADeepValueSharedByTwoHolders_FreesItAfterTheSecond) {
  Value first = nest_in_arrays(Value(kLongLeaf), kDeep);
  Value second = first;
  first = Value();
  const auto [levels, leaf] = unwrap_arrays(second);
  EXPECT_EQ(levels, kDeep);
  EXPECT_EQ(leaf.as_string(), kLongLeaf);
  second = Value();
}

TEST(ValueTest, Destroying_ADeepChainAroundAValueHeldElsewhere_StopsAtIt) {
  const Value inner = nest_in_arrays(Value(kLongLeaf), kDeep / 2);
  Value outer = nest_in_arrays(inner, kDeep / 2);
  EXPECT_EQ(unwrap_arrays(outer).first, kDeep);
  outer = Value();
  const auto [levels, leaf] = unwrap_arrays(inner);
  EXPECT_EQ(levels, kDeep / 2);
  EXPECT_EQ(leaf.as_string(), kLongLeaf);
}

}  // namespace
}  // namespace flowrt
