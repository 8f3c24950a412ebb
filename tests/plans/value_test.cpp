#include "plans/value.h"
#include "plans/value_json.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
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

TEST(ValueTest, HasKeys_TheKeysOfAnArrayInOrder_ByShapeOrByName) {
  const Value shape = intern_shape({"a", "b"});
  const Value names = Value::array({Value("a"), Value("b")});  // the same keys, not the shape
  const Value shaped = Value::object(shape, {Value(1), Value(2)});
  const Value pairs = Value::object({{"a", Value(1)}, {"b", Value(2)}});
  EXPECT_TRUE(shaped.has_keys(shape));
  EXPECT_TRUE(shaped.has_keys(names));
  EXPECT_TRUE(pairs.has_keys(shape));
  EXPECT_FALSE(Value::object({{"b", Value(1)}, {"a", Value(2)}}).has_keys(shape)) << "another order";
  EXPECT_FALSE(Value::object({{"a", Value(1)}}).has_keys(shape)) << "a key short";
  EXPECT_FALSE(Value::object({{"a", Value(1)}, {"b", Value(2)}, {"c", Value(3)}}).has_keys(shape));
  EXPECT_FALSE(Value::object({{"a", Value(1)}, {"c", Value(2)}}).has_keys(shape));
  EXPECT_FALSE(names.has_keys(shape)) << "an array has no keys";
  EXPECT_FALSE(shaped.has_keys(Value("a")));
  EXPECT_TRUE(Value::empty_object().has_keys(Value::empty_array()));
  EXPECT_FALSE(Value::empty_object().has_keys(shape));
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


// Writing, comparing and measuring values nested a million deep: until 2026-12-06 each
// recursed once per level and overflowed the stack. The expected texts are built in loops.
std::string repeated(std::string_view part, int times) {
  std::string out;
  out.reserve(part.size() * static_cast<size_t>(times));
  for (int i = 0; i < times; ++i) out.append(part);
  return out;
}

// Three members a level, the deep one between the others: the writer comes back up past
// each level to write the rest of its members in order.
Value nest_in_objects(Value inner, int levels, const Value& shape = Value()) {
  for (int i = 0; i < levels; ++i) {
    inner = shape.is_array() ? Value::object(shape, {Value(1), inner, Value::empty_array()})
                             : Value::object({{"a", Value(1)}, {"next", inner}, {"z", Value::empty_array()}});
  }
  return inner;
}

TEST(ValueTest, WritingJson_ArraysNestedAMillionDeep_GivesTheWholeText) {
  const Value deep = nest_in_arrays(Value(kLongLeaf), kDeep);
  const std::string expected = std::string(kDeep, '[') + '"' + kLongLeaf + '"' + std::string(kDeep, ']');
  EXPECT_TRUE(deep.to_json() == expected);  // not EXPECT_EQ: a failure would print 2 MB
  std::string out = "prefix ";
  write_json(Value::array({deep, Value(2.5)}), out);
  EXPECT_EQ(out.size(), 7 + expected.size() + 6);
  EXPECT_EQ(out.substr(0, 10), "prefix [[[");
  EXPECT_EQ(out.substr(out.size() - 8), "]]],2.5]");
}

TEST(ValueTest, WritingJson_ObjectsNestedAMillionDeep_KeepsMemberOrder) {
  const std::string expected = repeated(R"({"a":1,"next":)", kDeep) + "null" + repeated(R"(,"z":[]})", kDeep);
  EXPECT_TRUE(nest_in_objects(Value(), kDeep).to_json() == expected);
  const Value shape = intern_shape({"a", "next", "z"});
  const Value shaped = nest_in_objects(Value(), kDeep, shape);
  EXPECT_TRUE(shaped.shape().same_storage(shape));
  EXPECT_TRUE(shaped.to_json() == expected);
}

// Indented text grows with the square of the depth: a thousand deep, well past the levels
// written by recursion.
TEST(ValueTest, WritingPrettyJson_AThousandDeep_IndentsEveryLevel) {
  constexpr int kLevels = 1000;
  std::string expected;
  for (int i = 0; i < kLevels; ++i) {
    const std::string in(static_cast<size_t>(2 * (i + 1)), ' ');
    expected += "{\n" + in + "\"a\": 1,\n" + in + "\"next\": ";
  }
  expected += "[\n" + std::string(2 * kLevels + 2, ' ') + "\"s\"\n" + std::string(2 * kLevels, ' ') + "]";
  for (int i = kLevels - 1; i >= 0; --i) {
    expected += ",\n" + std::string(static_cast<size_t>(2 * (i + 1)), ' ') + "\"z\": []\n" +
                std::string(static_cast<size_t>(2 * i), ' ') + "}";
  }
  EXPECT_TRUE(to_pretty_json(nest_in_objects(Value::array({Value("s")}), kLevels)) == expected);
}

TEST(ValueTest, ShownValue_AMillionDeep_IsCutOrWhole) {
  const Value deep = nest_in_arrays(Value(7), kDeep);
  EXPECT_EQ(shown_value(deep), std::string(64, '[') + "...");
  const std::string whole = shown_value(deep, SIZE_MAX);
  EXPECT_TRUE(whole == std::string(kDeep, '[') + "7" + std::string(kDeep, ']'));
  const std::string cut = shown_value(nest_in_objects(Value(), kDeep), 3 * kDeep);
  EXPECT_TRUE(cut == repeated(R"({"a":1,"next":)", kDeep).substr(0, 3 * kDeep) + "...");
}

TEST(ValueTest, PrintTo_AMillionDeep_PrintsCompactJson) {
  const Value deep = nest_in_arrays(Value(7), kDeep);
  std::ostringstream os;
  PrintTo(deep, &os);
  EXPECT_TRUE(os.str() == deep.to_json());
  // Shallow and long: indented, as before.
  std::ostringstream shallow;
  PrintTo(Value::object({{"a", Value(std::string(80, 'x'))}}), &shallow);
  EXPECT_EQ(shallow.str(), "{\n  \"a\": \"" + std::string(80, 'x') + "\"\n}");
}

TEST(ValueTest, Equality_ArraysNestedAMillionDeep_ComparesToTheBottom) {
  const Value a = nest_in_arrays(Value(1), kDeep);
  const Value same = nest_in_arrays(Value(1.0), kDeep);  // 1 == 1.0, as at the top
  const Value other_leaf = nest_in_arrays(Value(2), kDeep);
  const Value one_shallower = nest_in_arrays(Value(1), kDeep - 1);
  const Value wider = nest_in_arrays(Value::array({Value(1), Value(1)}), kDeep - 1);
  EXPECT_FALSE(a.same_storage(same));
  EXPECT_TRUE(a == same);
  EXPECT_TRUE(same == a);
  EXPECT_FALSE(a == other_leaf);
  EXPECT_FALSE(a == one_shallower);
  EXPECT_FALSE(one_shallower == a);
  EXPECT_FALSE(a == wider);
  // Equal parts shared deep down: equal without a walk to the bottom.
  const Value shared_a = Value::array({a, Value(1)}), shared_b = Value::array({a, Value(1)});
  EXPECT_TRUE(shared_a == shared_b);
  EXPECT_FALSE(shared_a == Value::array({a, Value(2)}));
}

TEST(ValueTest, Equality_ObjectsNestedAMillionDeep_IgnoresMemberOrderAndLayout) {
  const Value pairs = nest_in_objects(Value("leaf"), kDeep);
  const Value shaped = nest_in_objects(Value("leaf"), kDeep, intern_shape({"a", "next", "z"}));
  Value reordered("leaf");
  for (int i = 0; i < kDeep; ++i) {
    reordered = Value::object({{"z", Value::empty_array()}, {"next", reordered}, {"a", Value(1.0)}});
  }
  EXPECT_TRUE(pairs == shaped);
  EXPECT_TRUE(shaped == reordered);
  EXPECT_TRUE(reordered == pairs);
  EXPECT_FALSE(pairs == nest_in_objects(Value("leaF"), kDeep));
  EXPECT_FALSE(pairs == nest_in_objects(Value::empty_object(), kDeep));
  Value renamed("leaf");  // "next" is "nexT" at the bottom
  renamed = Value::object({{"a", Value(1)}, {"nexT", renamed}, {"z", Value::empty_array()}});
  renamed = nest_in_objects(renamed, kDeep - 1);
  EXPECT_FALSE(pairs == renamed);
}

TEST(ValueTest, BoundValue_AMillionDeep_MeasuresLikeAShallowValue) {
  const Value deep = nest_in_arrays(Value(7), kDeep);
  const size_t bytes = 2u * kDeep + 24;  // numbers count as 24 bytes at most
  EXPECT_EQ(bound_value(deep, SIZE_MAX, SIZE_MAX), ValueBound::kWithin);
  EXPECT_EQ(bound_value(deep, bytes, kDeep), ValueBound::kWithin);
  EXPECT_EQ(bound_value(deep, bytes - 1, kDeep), ValueBound::kTooLarge);
  EXPECT_EQ(bound_value(deep, SIZE_MAX, kDeep - 1), ValueBound::kTooDeep);
  // Both limits passed: the depth is found first, on the way down, as in a shallow value.
  EXPECT_EQ(bound_value(deep, 10, kDeep - 1), ValueBound::kTooDeep);
  EXPECT_EQ(bound_value(Value::array({Value(1), Value(2)}), 10, 0), ValueBound::kTooDeep);
  const Value objects = nest_in_objects(Value(), kDeep);  // the innermost "z": [] one deeper
  EXPECT_EQ(bound_value(objects, SIZE_MAX, kDeep + 1), ValueBound::kWithin);
  EXPECT_EQ(bound_value(objects, SIZE_MAX, kDeep), ValueBound::kTooDeep);
}

}  // namespace
}  // namespace flowrt
