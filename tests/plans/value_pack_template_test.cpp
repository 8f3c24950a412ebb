// Values packed against a template (ValuePacker::value_as, plans/value_pack.h): what the
// template says takes no bytes, anything else is written plain, and either way the value
// read back with the same template equals the one packed, in the same member order and
// with the same types. Releasing the bytes needs no template (AddressSanitizer and
// LeakSanitizer runs of this test catch a reference count off by one either way).
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>

#include "plans/eval.h"
#include "plans/value_json.h"
#include "plans/value_pack.h"

namespace flowrt {
namespace packed_against_template_test {
namespace {

Value Json(std::string_view text) {
  Result<Value> v = parse_json(text);
  EXPECT_TRUE(v.is_ok()) << v.message();
  return v ? *v : Value();
}

Template Constant(Value v) {
  Template t;
  t.kind = Template::Kind::kConstant;
  t.constant = std::move(v);
  return t;
}

// A pill on field `name` of the record in the scope.
Pill FieldPill(const std::string& name) {
  Pill p;
  p.root = PillRoot::kField;
  p.path.push_back(PathSegment{Value(std::string_view(name)), -1});
  p.text = name;
  return p;
}

Template PillOn(const std::string& name) {
  Template t;
  t.kind = Template::Kind::kPill;
  t.pills.push_back(FieldPill(name));
  return t;
}

// Literal parts around pills on the fields named: "a{{x}}b{{y}}c" is Text({"a", "b", "c"}, {"x", "y"}).
Template Text(const std::vector<std::string>& literals, const std::vector<std::string>& fields) {
  Template t;
  t.kind = Template::Kind::kText;
  for (const std::string& l : literals) t.text_parts.push_back(Value(std::string_view(l)));
  for (const std::string& f : fields) t.pills.push_back(FieldPill(f));
  return t;
}

Template ArrayOf(std::vector<Template> children) {
  Template t;
  t.kind = Template::Kind::kArray;
  t.children = std::move(children);
  return t;
}

Template ObjectOf(const std::vector<std::string>& keys, std::vector<Template> children) {
  Template t;
  t.kind = Template::Kind::kObject;
  std::vector<Value> names;
  for (const std::string& k : keys) names.push_back(Value(std::string_view(k)));
  t.keys = intern_shape(names);
  t.children = std::move(children);
  return t;
}

Value Render(const Template& t, const Value& record) {
  Scope scope;
  scope.record = &record;
  Result<Value> v = render(t, scope);
  EXPECT_TRUE(v.is_ok()) << v.message();
  return v ? *v : Value();
}

// Packs `v` against `t`, reads it back against `t`, then releases the bytes (with no
// template).
Value RoundTrip(const Value& v, const Template& t, size_t* packed_size = nullptr) {
  ValuePacker out;
  out.value_as(v, t);
  const std::vector<unsigned char> bytes(out.bytes().begin(), out.bytes().end());
  if (packed_size) *packed_size = bytes.size();
  PackedReader in(bytes.data(), bytes.data() + bytes.size());
  Value back = in.value_as(t);
  EXPECT_TRUE(in.at_end());
  PackedReader release(bytes.data(), bytes.data() + bytes.size());
  release.release_value();
  EXPECT_TRUE(release.at_end());
  return back;
}

void ExpectSame(const Value& back, const Value& v) {
  EXPECT_EQ(back, v);
  EXPECT_EQ(back.to_json(), v.to_json()) << "the same member order and number types";
}

size_t PlainSize(const Value& v) {
  ValuePacker out;
  out.value(v);
  const size_t n = out.bytes().size();
  std::vector<unsigned char> bytes(out.bytes().begin(), out.bytes().end());
  PackedReader release(bytes.data(), bytes.data() + bytes.size());
  release.release_value();
  return n;
}

// A look-up's inputs as a step renders them: only the pills' values take bytes.
TEST(ValuePackTemplateTest, AValueRenderedFromItsTemplate_TakesOnlyWhatThePillsGave) {
  const Template t = ObjectOf({"table", "condition", "note"},
                              {Constant(Value("sys_user")),
                               ObjectOf({"field", "op", "value"}, {Constant(Value("group")), Constant(Value("eq")), PillOn("g")}),
                               Text({"P", " of ", " is assigned to nobody yet"}, {"p", "g"})});
  const Value record = Json(R"({"g": "group1", "p": 1})");
  const Value v = Render(t, record);
  ASSERT_EQ(v.to_json(), R"({"table":"sys_user","condition":{"field":"group","op":"eq","value":"group1"},"note":"P1 of group1 is assigned to nobody yet"})");
  size_t size = 0;
  const Value back = RoundTrip(v, t, &size);
  ExpectSame(back, v);
  EXPECT_TRUE(back.shape().same_storage(t.keys)) << "built on the template's shape, as rendering builds it";
  // parts(3), kLike, parts(3), kLike, kLike, "group1" (8), text(2): "1", "group1"
  EXPECT_LE(size, 26u);
  EXPECT_GT(PlainSize(v), 3 * size) << "against the template it is a fraction of its plain form";
}

TEST(ValuePackTemplateTest, AValueTheTemplateDoesNotSay_IsWrittenPlain_AndReadsBackAsItWas) {
  const Template t = ObjectOf({"n", "list", "text", "inner"},
                              {Constant(Value(1)), ArrayOf({PillOn("a"), Constant(Value("k"))}),
                               Text({"<", ">"}, {"a"}), ObjectOf({"x", "y"}, {PillOn("a"), PillOn("a")})});
  const Value record = Json(R"({"a": "v"})");
  const Value rendered = Render(t, record);
  ExpectSame(RoundTrip(rendered, t), rendered);
  for (const char* other : {
           R"({"n": 1.0, "list": ["v", "k"], "text": "<v>", "inner": {"x": "v", "y": "v"}})",  // 1.0, not the constant 1
           R"({"n": 1, "list": ["v"], "text": "<v>", "inner": {"x": "v", "y": "v"}})",         // one item short
           R"({"n": 1, "list": ["v", "k", 3], "text": "<v>", "inner": {"x": "v", "y": "v"}})",
           R"({"n": 1, "list": {"0": "v"}, "text": "<v>", "inner": {"x": "v", "y": "v"}})",   // not an array
           R"({"n": 1, "list": ["v", "k"], "text": "v>", "inner": {"x": "v", "y": "v"}})",    // no head
           R"({"n": 1, "list": ["v", "k"], "text": "<v", "inner": {"x": "v", "y": "v"}})",    // no tail
           R"({"n": 1, "list": ["v", "k"], "text": "<", "inner": {"x": "v", "y": "v"}})",     // shorter than both
           R"({"n": 1, "list": ["v", "k"], "text": 7, "inner": {"x": "v", "y": "v"}})",       // not a string
           R"({"n": 1, "list": ["v", "k"], "text": "<v>", "inner": {"y": "v", "x": "v"}})",   // keys in another order
           R"({"n": 1, "list": ["v", "k"], "text": "<v>", "inner": {"x": "v", "z": "v"}})",   // another key
           R"({"n": 1, "list": ["v", "k"], "text": "<v>", "inner": {"x": "v"}})",             // a key short
           R"({"list": ["v", "k"], "text": "<v>", "inner": {"x": "v", "y": "v"}, "n": 1})",   // the whole in another order
           R"([1, 2])", R"(null)", R"("a string")"}) {
    SCOPED_TRACE(other);
    const Value v = Json(other);
    ExpectSame(RoundTrip(v, t), v);
  }
  // A constant of equal content in other storage is not the constant: its type is kept.
  const Value one_double(1.0);
  const Value back = RoundTrip(one_double, Constant(Value(1)));
  EXPECT_TRUE(back.is_double());
}

// The text read back is the string packed, however the template's literals also occur in
// the pills' text: the split may differ from the render's, the string may not.
TEST(ValuePackTemplateTest, ATextWhosePillsHoldTheTemplatesLiterals_ReadsBackTheSameString) {
  const Template t = Text({"a-", "-b-", "-c"}, {"x", "y"});
  for (const char* fields : {R"({"x": "-b-", "y": "-c-c"})", R"({"x": "", "y": ""})", R"({"x": "-b--b-", "y": "a-"})",
                             R"({"x": "a long text that holds -b- and -c twice -b- -c", "y": 12})"}) {
    SCOPED_TRACE(fields);
    const Value v = Render(t, Json(fields));
    ExpectSame(RoundTrip(v, t), v);
  }
  const Template adjacent = Text({"", "", ""}, {"x", "y"});  // "{{x}}{{y}}"
  const Value v = Render(adjacent, Json(R"({"x": "ab", "y": "cd"})"));
  ExpectSame(RoundTrip(v, adjacent), v);
  const Template middle_missing = Text({"(", ")(", ")"}, {"x", "y"});
  const Value w = Json(R"x("(no middle literal here)")x");
  ExpectSame(RoundTrip(w, middle_missing), w);
}

TEST(ValuePackTemplateTest, ANodeHeldElsewhere_InsideTheTemplatesParts_IsKeptByReference_AndReleased) {
  const std::string text(200, 'q');
  const Value held{std::string_view(text)};  // as a table holds a record's string
  const Template t = ObjectOf({"a", "b"}, {Constant(Value("k")), PillOn("s")});
  const Value rendered = Render(t, Value::object({{"s", held}}));
  size_t size = 0;
  const Value back = RoundTrip(rendered, t, &size);
  ExpectSame(back, rendered);
  EXPECT_LT(size, 24u) << "a reference, not the 200 bytes";
  EXPECT_TRUE(back["b"].same_storage(held));
}

// Random templates, and values rendered from them or changed anywhere: every one reads
// back as it was packed (seeded; the same cases on every run).
TEST(ValuePackTemplateTest, RandomTemplatesAndValues_ReadBackAsPacked) {
  std::mt19937 rng(20261206);
  auto pick = [&rng](size_t n) { return static_cast<size_t>(rng() % n); };
  const std::vector<std::string> pieces = {"", "-", "a", "ab", "-a-", "b"};
  std::function<Value(int)> random_value = [&](int depth) -> Value {
    switch (pick(depth > 1 ? 5 : 7)) {
      case 0: return Value();
      case 1: return Value(static_cast<long long>(pick(5)));
      case 2: return Value(static_cast<double>(pick(3)));
      case 3: return Value(std::string_view(pieces[pick(pieces.size())] + pieces[pick(pieces.size())]));
      case 4: return Value(std::string_view(std::string(20 + pick(10), 'z')));
      case 5: return Value::array({random_value(depth + 1), random_value(depth + 1)});
      default: return Value::object({{"k", random_value(depth + 1)}});
    }
  };
  std::function<Template(int)> random_template = [&](int depth) -> Template {
    switch (pick(depth > 2 ? 3 : 5)) {
      case 0: return Constant(random_value(depth));
      case 1: return PillOn("f" + std::to_string(pick(3)));
      case 2: {
        const size_t n = 1 + pick(3);
        std::vector<std::string> literals, fields;
        for (size_t i = 0; i <= n; ++i) literals.push_back(pieces[pick(pieces.size())]);
        for (size_t i = 0; i < n; ++i) fields.push_back("f" + std::to_string(pick(3)));
        return Text(literals, fields);
      }
      case 3: {
        std::vector<Template> children;
        for (size_t i = 0, n = 1 + pick(3); i < n; ++i) children.push_back(random_template(depth + 1));
        return ArrayOf(std::move(children));
      }
      default: {
        std::vector<std::string> keys;
        std::vector<Template> children;
        for (size_t i = 0, n = 1 + pick(3); i < n; ++i) {
          keys.push_back("m" + std::to_string(i));
          children.push_back(random_template(depth + 1));
        }
        return ObjectOf(keys, std::move(children));
      }
    }
  };
  // Replaces one part of `v` at random, or nothing.
  std::function<Value(const Value&)> change = [&](const Value& v) -> Value {
    if (pick(3) == 0) return random_value(2);
    if (v.is_array() && v.size() > 0) {
      std::vector<Value> items(v.items().begin(), v.items().end());
      const size_t i = pick(items.size());
      items[i] = change(items[i]);
      return Value::array(std::span<const Value>(items));
    }
    if (v.is_object() && v.size() > 0) {
      const size_t i = pick(v.size());
      return v.with(v.members()[i].key.as_string(), change(v.members()[i].value));
    }
    return v;
  };
  for (int round = 0; round < 3000; ++round) {
    const Template t = random_template(0);
    const Value record = Value::object({{"f0", random_value(1)}, {"f1", random_value(1)}, {"f2", random_value(1)}});
    const Value rendered = Render(t, record);
    SCOPED_TRACE("round " + std::to_string(round) + ": " + rendered.to_json());
    ExpectSame(RoundTrip(rendered, t), rendered);
    const Value changed = change(rendered);
    ExpectSame(RoundTrip(changed, t), changed);
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace packed_against_template_test
}  // namespace flowrt
