// parse_json against the standard: specific cases, and a seeded differential run against
// nlohmann::json (a strict, independent parser) over valid documents and mutations of them.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>

#include "plans/value_json.h"
#include "tests/support/json_reference.h"

namespace flowrt {
namespace {

// Checks one text against the reference: both accept it with the same value, or both refuse.
void expect_agrees(const std::string& text) {
  const json_reference::Verdict v = json_reference::compare(text);
  EXPECT_TRUE(v.agree) << "text: " << text << "\nours: " << v.ours << "\nnlohmann: " << v.reference;
}

TEST(JsonParseTest, Scalars_NumbersKeepTheirKinds) {
  for (const char* text : {"0", "-0", "1", "-1", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
                           "-9223372036854775809", "18446744073709551616", "1.5", "-0.0", "1e5", "1E+5", "1e-5", "2.5e-3",
                           "1e400", "-1e400", "1e-400", "123456789012345678901234567890", "0.1", "true", "false", "null",
                           "\"\"", "\"a\"", " \t\r\n 7 \n"}) {
    expect_agrees(text);
  }
  EXPECT_TRUE(parse_json("9223372036854775808")->is_double());
  EXPECT_TRUE(parse_json("-9223372036854775808")->is_int());
  EXPECT_TRUE(parse_json("1.0")->is_double());
}

TEST(JsonParseTest, Strings_EscapesAndUtf8) {
  for (const char* text : {R"("\"\\\/\b\f\n\r\t")", R"("\u0000\u001f\u00e9\u20AC")", R"("\ud83d\ude00")", "\"é€😀\"",
                           R"("\ud800")", R"("\udc00")", R"("\ud800\u0041")", R"("\x")", R"("\u12")", R"("\u12G4")",
                           "\"a\nb\"", "\"a\tb\"", "\"\x7f\"", "\"\xc3\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"",
                           "\"\xf4\x90\x80\x80\"", "\"\xe0\x80\xaf\"", "\"\xf0\x80\x80\xaf\"", "\"\xff\"", "\"abc",
                           "\"\\", "\"\\\""}) {
    expect_agrees(text);
  }
  EXPECT_EQ(parse_json(R"("\ud83d\ude00")")->as_string(), "\xF0\x9F\x98\x80");
}

TEST(JsonParseTest, Structure_AndItsErrors) {
  for (const char* text : {"[]", "{}", "[[]]", "[1,[2,[3,{}]],{\"a\":[]}]", "{\"a\":{\"b\":{\"c\":null}}}", "[1,]", "[,1]",
                           "{\"a\":1,}", "{,}", "{\"a\"}", "{\"a\":}", "{a:1}", "{\"a\" 1}", "[1 2]", "[", "]", "{", "}",
                           "", " ", "[1]]", "[1] x", "01", "-", "1.", ".5", "1e", "+1", "tru", "nul", "True", "[nan]",
                           "{\"a\":1 \"b\":2}", "[\"a\":1]", "{\"a\":1]", "[1}"}) {
    expect_agrees(text);
  }
}

// A text that begins with a UTF-8 byte order mark is refused saying so (some editors write
// one), where the parser alone would say "invalid literal" at line 1, column 1.
TEST(JsonParseTest, AByteOrderMark_IsRefusedNamingIt) {
  Result<Value> r = parse_json("\xEF\xBB\xBF{\"id\": \"f\"}");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("starts with a UTF-8 byte order mark"), std::string::npos) << r.message();
  EXPECT_NE(r.message().find("line 1, column 1"), std::string::npos) << r.message();
  EXPECT_TRUE(parse_json("{\"id\": \"\xEF\xBB\xBF\"}").is_ok()) << "one inside a string is text like any other";
}

TEST(JsonParseTest, DuplicateKeys_KeepTheLastValue) {
  Result<Value> v = parse_json(R"({"a":1,"b":2,"a":3})");
  ASSERT_TRUE(v.is_ok());
  EXPECT_EQ((*v)["a"], Value(3));
  EXPECT_EQ(v->size(), 2u);
  std::string big = "{";
  for (int i = 0; i < 40; ++i) big += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
  big += "\"k7\":\"last\"}";
  Result<Value> b = parse_json(big);
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ((*b)["k7"], Value("last"));
  EXPECT_EQ(b->size(), 40u);
}

// JsonLimits::shared_shapes: objects of up to 16 keys are built on shared key lists, and
// read exactly as without; larger ones, and ones with a key written twice, as usual.
TEST(JsonParseTest, SharedShapes_ObjectsWithTheSameKeysShareOneKeyList_AndReadTheSame) {
  JsonLimits shared;
  shared.shared_shapes = true;
  std::string big = "{";
  for (int i = 0; i < 20; ++i) big += std::string(i ? "," : "") + "\"k" + std::to_string(i) + "\":" + std::to_string(i);
  big += "}";
  const std::string text = R"([{"a": 1, "b": {"c": [true]}}, {"a": 2, "b": {"c": []}}, {"a": 1, "a": 3}, )" + big + "]";
  Result<Value> with = parse_json(text, shared);
  Result<Value> without = parse_json(text);
  ASSERT_TRUE(with.is_ok() && without.is_ok());
  EXPECT_EQ(with->to_json(), without->to_json());
  EXPECT_EQ(*with, *without);
  ASSERT_FALSE(with->at(0).shape().is_null());
  EXPECT_TRUE(with->at(0).shape().same_storage(with->at(1).shape()));
  EXPECT_TRUE(with->at(0)["b"].shape().same_storage(with->at(1)["b"].shape()));
  EXPECT_TRUE(without->at(0).shape().is_null());
  EXPECT_EQ(with->at(2)["a"], Value(3)) << "a key written twice keeps the last value";
  EXPECT_EQ(with->at(3)["k19"], Value(19));
  Result<Value> record = parse_json(
      R"({"created": "2026-12-01T10:00:00.000Z", "updated": "2026-12-01T10:00:00.000Z", "other": "2026-12-01T11:00:00.000Z"})",
      shared);
  ASSERT_TRUE(record.is_ok());
  EXPECT_TRUE((*record)["created"].same_storage((*record)["updated"])) << "equal long strings: one copy";
  EXPECT_FALSE((*record)["created"].same_storage((*record)["other"]));
  EXPECT_EQ((*record)["other"], Value("2026-12-01T11:00:00.000Z"));
}

TEST(JsonParseTest, Errors_NameWhatAndWhere) {
  Value v;
  JsonParseError e;
  ASSERT_FALSE(parse_json("[1,\n  2,\n  x]", &v, &e));
  EXPECT_EQ(e.line, 3u);
  EXPECT_EQ(e.column, 3u);
  EXPECT_EQ(e.message, "invalid literal; expected a value");
  ASSERT_FALSE(parse_json("{\"a\": \"b\nc\"}", &v, &e));
  EXPECT_EQ(e.message, "control character U+000A in a string must be escaped");
  EXPECT_EQ(e.line, 1u);
  ASSERT_FALSE(parse_json("[1, 2", &v, &e));
  EXPECT_EQ(e.message, "unexpected end of input; expected ',' or ']'");
  ASSERT_FALSE(parse_json("{\"a\": 1} {", &v, &e));
  EXPECT_EQ(e.message, "unexpected text after the document");
  EXPECT_EQ(e.column, 10u);
  ASSERT_FALSE(parse_json(std::string_view("[1]\0", 4), &v, &e)) << "a NUL byte is not whitespace";
  EXPECT_EQ(e.message, "unexpected text after the document");
}

// The pointer of the value an error is in: the member or item being read or just read; the
// object's own while one of its keys is read; "" for the document. Keys are decoded.
TEST(JsonParseTest, Errors_NameThePointerOfTheValueTheyAreIn) {
  auto pointer_of = [](std::string_view text) {
    Value v;
    JsonParseError e;
    EXPECT_FALSE(parse_json(text, &v, &e)) << text;
    EXPECT_TRUE(is_well_formed_utf8(e.pointer)) << e.pointer;
    return e.pointer;
  };
  EXPECT_EQ(pointer_of(R"({"a": {"b": [1, 2, x)"), "/a/b/2");
  EXPECT_EQ(pointer_of(R"({"a~/b": tru)"), "/a~0~1b");
  EXPECT_EQ(pointer_of(R"([{"x": 1}, {"y": )"), "/1/y");
  EXPECT_EQ(pointer_of(R"({"s": "a,b\"c", "t": ?)"), "/t");
  EXPECT_EQ(pointer_of(R"([[], [1, {"k": [true, nul)"), "/1/1/k/1");
  // Between items and members: the one just read.
  EXPECT_EQ(pointer_of("[1, 2 x"), "/1");
  EXPECT_EQ(pointer_of(R"({"a": 1 x)"), "/a");
  EXPECT_EQ(pointer_of(R"({"a": {"b": 1} x)"), "/a");
  EXPECT_EQ(pointer_of(R"({"a": [] x)"), "/a");
  // In a key, or where one should be: the object.
  EXPECT_EQ(pointer_of(R"({"a": {"b": 1, x)"), "/a");
  EXPECT_EQ(pointer_of(R"({"a": 1, "b" 2})"), "");
  EXPECT_EQ(pointer_of("{\"caf\xC3\xA9\xC3\": 1}"), "");  // invalid UTF-8 in the key
  EXPECT_EQ(pointer_of(R"({"\ud800x": 1})"), "");           // an unpaired surrogate in the key
  EXPECT_EQ(pointer_of("{"), "");
  EXPECT_EQ(pointer_of(""), "");
  EXPECT_EQ(pointer_of(R"({"a": 1} {)"), "") << "after the document";
  // Keys as decoded, escaped for the pointer.
  EXPECT_EQ(pointer_of(R"({"a\nb\u00e9\ud83d\ude00\/": x)"), "/a\nb\xC3\xA9\xF0\x9F\x98\x80~1");
  // The body the HTTP fuzzer found: an error inside a key holding a lone lead byte.
  EXPECT_EQ(pointer_of(std::string_view("{\"definitrigger.!x\\\xF2\x1FV\0\0.\": 1}", 30)), "");
}

// Valid documents of every kind, and each of them cut and with bytes changed: nlohmann and
// parse_json accept and refuse the same texts, and agree on every value.
TEST(JsonParseTest, Differential_SeededDocumentsAndMutations) {
  std::mt19937_64 rng(20261201);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  const std::vector<std::string> scalars = {"0", "-12", "3.25", "1e3", "-0.5E-2", "9223372036854775807", "99999999999999999999",
                                            "true", "false", "null", "\"\"", "\"plain\"", R"("esc\"\\\n\u00e9")",
                                            "\"\xc3\xa9\xe2\x82\xac\"", R"("\ud83d\ude00")"};
  std::function<std::string(int)> gen = [&](int depth) -> std::string {
    const size_t kind = depth > 4 ? 0 : pick(4);
    if (kind <= 1) return scalars[pick(scalars.size())];
    std::string s;
    const size_t n = pick(5);
    const std::string ws = pick(3) == 0 ? " \n" : "";
    if (kind == 2) {
      s = "[" + ws;
      for (size_t i = 0; i < n; ++i) s += (i ? "," + ws : "") + gen(depth + 1);
      return s + ws + "]";
    }
    s = "{" + ws;
    for (size_t i = 0; i < n; ++i) s += (i ? "," : "") + ws + "\"k" + std::to_string(pick(4)) + "\"" + ws + ":" + gen(depth + 1);
    return s + ws + "}";
  };
  const std::string bytes = "[]{}:,\" \\0123456789-+.eEtrufalsn\x01\x7f\xc3\xa9\xed\xff";
  for (int round = 0; round < 4000; ++round) {
    const std::string doc = gen(0);
    expect_agrees(doc);
    std::string m = doc;
    switch (pick(3)) {
      case 0: m = m.substr(0, pick(m.size() + 1)); break;
      case 1: if (!m.empty()) m[pick(m.size())] = bytes[pick(bytes.size())]; break;
      default: m.insert(pick(m.size() + 1), 1, bytes[pick(bytes.size())]); break;
    }
    expect_agrees(m);
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace flowrt
