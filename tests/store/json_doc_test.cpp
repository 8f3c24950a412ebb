// JsonDoc: a document a store change carries, as a Value or as its text.
#include "store/json_doc.h"

#include <gtest/gtest.h>

#include "plans/value_json.h"

namespace flowrt {
namespace {

TEST(JsonDocTest, FromAValue_OrFromItsText_ReadsAndWritesTheSame) {
  const Value v = *parse_json(R"({"id": "ctx-1", "steps": [{"n": 1.5}], "error": null})");
  const JsonDoc from_value = v;
  const JsonDoc from_text = JsonDoc::from_text(v.to_json());
  EXPECT_FALSE(from_value.is_text());
  EXPECT_TRUE(from_text.is_text());
  EXPECT_EQ(from_value.value(), v);
  EXPECT_EQ(from_text.value(), v);
  std::string a = "x", b = "x";
  from_value.write(a);
  from_text.write(b);
  EXPECT_EQ(a, "x" + v.to_json());
  EXPECT_EQ(b, a);
  std::string scratch;
  EXPECT_EQ(from_value.text(scratch), v.to_json());
  scratch.clear();
  EXPECT_EQ(from_text.text(scratch), v.to_json());
  EXPECT_TRUE(scratch.empty()) << "its own text, not a copy into the scratch";
}

TEST(JsonDocTest, None_IsNull_FromANullValueOrEmptyText) {
  EXPECT_TRUE(JsonDoc().is_null());
  EXPECT_TRUE(JsonDoc(Value()).is_null());
  EXPECT_TRUE(JsonDoc::from_text("").is_null());
  EXPECT_FALSE(JsonDoc::from_text("null").is_null()) << "the text null is a document";
  EXPECT_TRUE(JsonDoc().value().is_null());
  EXPECT_FALSE(JsonDoc(Value::empty_object()).is_null());
}

}  // namespace
}  // namespace flowrt
