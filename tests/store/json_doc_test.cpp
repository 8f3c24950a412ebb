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
  EXPECT_EQ(from_value.value(), v);
  EXPECT_EQ(from_text.value(), v);
  std::string scratch = "x";
  EXPECT_EQ(from_value.text(scratch), v.to_json());
  EXPECT_EQ(scratch, v.to_json()) << "a Value's text is written into the scratch, replacing what it held";
  scratch = "x";
  EXPECT_EQ(from_text.text(scratch), v.to_json());
  EXPECT_EQ(scratch, "x") << "its own text, not a copy into the scratch";
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
