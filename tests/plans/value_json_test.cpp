#include "plans/value_json.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace flowrt {
namespace {

TEST(ValueJsonTest, RoundTrip_KeepsTypesAndOrder) {
  const std::string text = R"({"b":1,"a":[true,null,2.5,"s\n\"q\""],"c":{"d":-3},"e":1.0})";
  Result<Value> v = parse_json(text);
  ASSERT_TRUE(v.is_ok()) << v.message();
  EXPECT_TRUE((*v)["b"].is_int());
  EXPECT_TRUE((*v)["e"].is_double());
  EXPECT_EQ(v->to_json(), text);
}

// A string that did not come from JSON (a file name, an OS message, a C++ caller's bytes)
// may hold bytes that are not UTF-8: the JSON written is still UTF-8, each such byte as
// U+FFFD, and parses back; well-formed sequences of every length go as they are.
TEST(ValueJsonTest, Writing_AByteThatIsNotUtf8_IsU_FFFD_TheTextParsesBack) {
  const std::string fffd = "\xEF\xBF\xBD";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"plain", "\"plain\""},
      {"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80", "\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\""},
      {"a\xFF" "b", "\"a" + fffd + "b\""},
      {"\xC3", "\"" + fffd + "\""},                            // a sequence cut at the end
      {"\xE2\x82x", "\"" + fffd + fffd + "x\""},              // cut before its last byte
      {"\xC0\xAF", "\"" + fffd + fffd + "\""},                // overlong
      {"\xED\xA0\x80", "\"" + fffd + fffd + fffd + "\""},     // a surrogate
      {"\x80\"\n", "\"" + fffd + "\\\"\\n\""},              // escapes still escaped
  };
  for (const auto& [raw, json] : cases) {
    const std::string written = Value(std::string_view(raw)).to_json();
    EXPECT_EQ(written, json) << raw;
    EXPECT_TRUE(is_well_formed_utf8(written)) << written;
    EXPECT_TRUE(parse_json(written).is_ok()) << written;
  }
  // Keys too, and in a whole document.
  const Value doc = Value::object({{std::string_view("k\xFF"), Value(std::string_view("v\xFE"))}});
  EXPECT_EQ(doc.to_json(), "{\"k" + fffd + "\":\"v" + fffd + "\"}");
}

TEST(ValueJsonTest, SyntaxError_HasLineAndColumn) {
  Value v;
  JsonParseError e;
  ASSERT_FALSE(parse_json("{\n  \"a\": 1,\n  \"b\": tru\n}", &v, &e));
  EXPECT_EQ(e.line, 3u);
  EXPECT_GT(e.column, 1u);
  EXPECT_NE(e.describe().find("line 3, column"), std::string::npos) << e.describe();
}

TEST(ValueJsonTest, DeepNesting_IsRefusedCleanly) {
  Value v;
  JsonParseError e;
  ASSERT_FALSE(parse_json(std::string(100000, '['), &v, &e));
  EXPECT_NE(e.message.find("nesting deeper than the limit of 256 levels (max_json_depth)"), std::string::npos) << e.message;
  EXPECT_EQ(e.column, 257u);
  std::string objects;
  for (int i = 0; i < 500000; ++i) objects += "{\"a\":";
  ASSERT_FALSE(parse_json(objects, &v, &e));
  EXPECT_NE(e.message.find("nesting"), std::string::npos) << e.message;
}

TEST(ValueJsonTest, LimitsOnStringsAndSize) {
  JsonLimits limits;
  limits.max_string_bytes = 10;
  Value v;
  JsonParseError e;
  EXPECT_FALSE(parse_json(R"(["0123456789ab"])", &v, &e, limits));
  EXPECT_NE(e.message.find("longer than the limit of 10 bytes"), std::string::npos);
  limits.max_bytes = 5;
  EXPECT_FALSE(parse_json("[1, 2, 3]", &v, &e, limits));
}

TEST(ValueJsonTest, HugeIntegersBecomeDoubles_NonFiniteWriteAsNull) {
  Result<Value> v = parse_json("[18446744073709551615, -9223372036854775808]");
  ASSERT_TRUE(v.is_ok());
  EXPECT_TRUE(v->at(0).is_double());
  EXPECT_TRUE(v->at(1).is_int());
  EXPECT_EQ(Value(1.0 / 0.0).to_json(), "null");
  EXPECT_EQ(Value(2.0).to_json(), "2.0");
}

TEST(ValueJsonTest, PrettyJson_IsIndented) {
  EXPECT_EQ(to_pretty_json(Value::object({{"a", Value::array({Value(1)})}})), "{\n  \"a\": [\n    1\n  ]\n}");
}

// A message quotes at most max_bytes of a value, cut on a character boundary, and writes
// no more than that of it: a value whose parts are shared 2^40 times over is shown at once.
TEST(ValueJsonTest, ShownValue_IsTheCompactJson_CutAfterMaxBytes_WritingNoMoreOfIt) {
  EXPECT_EQ(shown_value(Value::object({{"a", Value::array({Value(1), Value("x")})}})), R"({"a":[1,"x"]})");
  EXPECT_EQ(shown_value(Value(std::string(100, 'y')), 10), "\"yyyyyyyyy...");
  EXPECT_EQ(shown_value(Value("ééééé"), 4), "\"é...") << "not inside a character";
  Value doubled("ab");
  for (int i = 0; i < 40; ++i) doubled = Value::array({doubled, doubled});
  const std::string shown = shown_value(doubled);
  EXPECT_EQ(shown.size(), 64u + 3u);
  EXPECT_EQ(shown.substr(0, 8), R"([[[[[[[[)");
  Value long_key = Value::object({{std::string(1000, 'k'), Value(1)}});
  EXPECT_EQ(shown_value(long_key, 6), "{\"kkkk...");
}

}  // namespace
}  // namespace flowrt
