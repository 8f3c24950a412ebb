// Rendering and evaluation of hand-built templates and conditions (no compiler involved).
#include "plans/eval.h"

#include <gtest/gtest.h>

namespace flowrt {
namespace {

Pill field_pill(const char* name) {
  Pill p;
  p.root = PillRoot::kField;
  p.path.push_back(PathSegment{Value(name), -1});
  p.text = name;
  return p;
}

Condition compare(const char* field, CompareOp op, Value v) {
  Condition c;
  c.kind = Condition::Kind::kCompare;
  c.subject = field_pill(field);
  c.op = op;
  c.value.kind = Template::Kind::kConstant;
  c.value.constant = std::move(v);
  return c;
}

TEST(EvalTest, Compare_OpsFollowTheSpec) {
  EXPECT_TRUE(compare(CompareOp::kEq, Value(1), Value(1.0), nullptr));
  EXPECT_FALSE(compare(CompareOp::kLt, Value("1"), Value(2), nullptr)) << "different types compare false";
  EXPECT_TRUE(compare(CompareOp::kNe, Value("1"), Value(2), nullptr));
  EXPECT_TRUE(compare(CompareOp::kGe, Value("b"), Value("a"), nullptr));
  EXPECT_TRUE(compare(CompareOp::kIn, Value("x"), Value::array({Value("x")}), nullptr));
  EXPECT_FALSE(compare(CompareOp::kNotIn, Value("x"), Value(5), nullptr));
  EXPECT_TRUE(compare(CompareOp::kIsEmpty, Value::empty_object(), Value(), nullptr));
  const Value before(1);
  EXPECT_TRUE(compare(CompareOp::kChanges, Value(2), Value(), &before));
  EXPECT_FALSE(compare(CompareOp::kChangesTo, Value(2), Value(3), &before));
  EXPECT_TRUE(compare(CompareOp::kChangesFrom, Value(2), Value(1), &before));
}

// Values nested a million deep, built in C++ in loops: the comparisons follow ==, which
// has no depth limit; the orderings find arrays unordered without looking inside.
TEST(EvalTest, Compare_ValuesNestedAMillionDeep) {
  Value a(1), b(1.0), c(2);
  for (int i = 0; i < 1000000; ++i) {
    a = Value::array({a});
    b = Value::array({b});
    c = Value::array({c});
  }
  EXPECT_TRUE(compare(CompareOp::kEq, a, b, nullptr));
  EXPECT_FALSE(compare(CompareOp::kNe, a, b, nullptr));
  EXPECT_TRUE(compare(CompareOp::kNe, a, c, nullptr));
  EXPECT_TRUE(compare(CompareOp::kIn, b, Value::array({c, a}), nullptr));
  EXPECT_FALSE(compare(CompareOp::kContains, Value::array({c}), a, nullptr));
  EXPECT_TRUE(compare(CompareOp::kChanges, a, Value(), &c));
  EXPECT_FALSE(compare(CompareOp::kChanges, a, Value(), &b));
  for (CompareOp op : {CompareOp::kLt, CompareOp::kLe, CompareOp::kGt, CompareOp::kGe}) {
    EXPECT_FALSE(compare(op, a, b, nullptr));
    EXPECT_FALSE(compare(op, a, c, nullptr));
  }
}

TEST(EvalTest, Conditions_AllAnyNot_OverARecord) {
  Condition all;
  all.kind = Condition::Kind::kAll;
  all.children = {compare("p", CompareOp::kLe, Value(2)), compare("s", CompareOp::kStartsWith, Value("ne"))};
  Value rec = Value::object({{"p", Value(1)}, {"s", Value("new")}});
  Scope scope;
  scope.record = &rec;
  EXPECT_TRUE(*evaluate(all, scope));
  Condition n;
  n.kind = Condition::Kind::kNot;
  n.children = {all};
  EXPECT_FALSE(*evaluate(n, scope));
}

TEST(EvalTest, BindCondition_RendersValuesNow) {
  Condition c = compare("group", CompareOp::kEq, Value());
  Pill from_var;
  from_var.root = PillRoot::kVariable;
  from_var.slot = 0;
  c.value.kind = Template::Kind::kPill;
  c.value.pills = {from_var};
  std::vector<Value> vars{Value("net")};
  Scope scope;
  scope.variables = vars;
  Result<Condition> bound = bind_condition(c, scope);
  ASSERT_TRUE(bound.is_ok());
  vars[0] = Value("db");
  Value rec = Value::object({{"group", Value("net")}});
  Scope later;
  later.record = &rec;
  EXPECT_TRUE(*evaluate(*bound, later));
}

TEST(EvalTest, TextTemplate_RendersEachPart) {
  Template t;
  t.kind = Template::Kind::kText;
  Pill p = field_pill("n");
  p.root = PillRoot::kField;
  t.pills = {p, p};
  t.text_parts = {Value("a"), Value("-"), Value("z")};
  Value rec = Value::object({{"n", Value::array({Value(1)})}});
  Scope scope;
  scope.record = &rec;
  EXPECT_EQ(*render(t, scope), Value("a[1]-[1]z"));
}

TEST(EvalTest, Transforms_ErrorsNameThePill) {
  Transform add{TransformKind::kAdd, Value(1), nullptr};
  Result<Value> r = apply_transform(add, Value("x"), "inputs.s | add: 1");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.message(), "{{inputs.s | add: 1}}: add needs a number, got string");
  EXPECT_EQ(*apply_transform(add, Value(int64_t{9223372036854775807}), "p"), Value(9223372036854775808.0))
      << "overflow falls back to a double";
  EXPECT_EQ(*apply_transform(Transform{TransformKind::kLength, Value(), nullptr}, Value("h\xc3\xa9"), "p"), Value(2));
}

TEST(EvalTest, Truthiness) {
  EXPECT_FALSE(truthy(Value()));
  EXPECT_FALSE(truthy(Value(0)));
  EXPECT_FALSE(truthy(Value("")));
  EXPECT_TRUE(truthy(Value("0")));
  EXPECT_TRUE(truthy(Value::array({Value()})));
}

}  // namespace
}  // namespace flowrt
