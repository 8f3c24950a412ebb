#include "compiler/pill_syntax.h"

#include <gtest/gtest.h>

namespace flowrt {
namespace {

TEST(PillSyntaxTest, SplitsTextAndPills) {
  Result<std::vector<TemplatePiece>> pieces = split_template("Hi {{ trigger.record.name | upper }}, #{{vars.n}}!");
  ASSERT_TRUE(pieces.is_ok());
  ASSERT_EQ(pieces->size(), 5u);
  EXPECT_EQ((*pieces)[0].text, "Hi ");
  EXPECT_TRUE((*pieces)[1].is_pill);
  EXPECT_EQ((*pieces)[1].pill.path, (std::vector<std::string>{"trigger", "record", "name"}));
  ASSERT_EQ((*pieces)[1].pill.transforms.size(), 1u);
  EXPECT_EQ((*pieces)[1].pill.transforms[0].name, "upper");
  EXPECT_EQ((*pieces)[4].text, "!");
}

TEST(PillSyntaxTest, TransformArguments_AndIndexSyntax) {
  Result<PillSyntax> p = parse_pill(R"(steps.list.records[2].name | default: "a|b" | add: 1)");
  ASSERT_TRUE(p.is_ok()) << p.message();
  EXPECT_EQ(p->path, (std::vector<std::string>{"steps", "list", "records", "2", "name"}));
  ASSERT_EQ(p->transforms.size(), 2u);
  EXPECT_EQ(p->transforms[0].argument, "\"a|b\"");
  EXPECT_EQ(p->transforms[1].argument, "1");
}

// "\{{" is a literal "{{"; "\\{{" a literal backslash before a pill. Until 2026-12-06 a
// literal "{{" could not be written at all.
TEST(PillSyntaxTest, ABackslashBeforeTheBraces_MakesThemText) {
  Result<std::vector<TemplatePiece>> text = split_template(R"(Dear \{{name}}, see \{{ and }})");
  ASSERT_TRUE(text.is_ok()) << text.message();
  ASSERT_EQ(text->size(), 1u);
  EXPECT_FALSE((*text)[0].is_pill);
  EXPECT_EQ((*text)[0].text, "Dear {{name}}, see {{ and }}");

  Result<std::vector<TemplatePiece>> mixed = split_template(R"(a\{{b {{vars.x}} c\\{{vars.y}})");
  ASSERT_TRUE(mixed.is_ok()) << mixed.message();
  ASSERT_EQ(mixed->size(), 4u);
  EXPECT_EQ((*mixed)[0].text, "a{{b ");
  EXPECT_EQ((*mixed)[1].pill.path, (std::vector<std::string>{"vars", "x"}));
  EXPECT_EQ((*mixed)[2].text, R"( c\)");
  EXPECT_EQ((*mixed)[3].pill.path, (std::vector<std::string>{"vars", "y"}));

  // Each pair of backslashes is one; one left over makes the braces text.
  Result<std::vector<TemplatePiece>> runs = split_template(R"(\\\{{x}} and \\\\{{vars.z}})");
  ASSERT_TRUE(runs.is_ok()) << runs.message();
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].text, R"(\{{x}} and \\)");
  EXPECT_EQ((*runs)[1].pill.path, (std::vector<std::string>{"vars", "z"}));

  Result<std::vector<TemplatePiece>> unclosed = split_template("a {{ b");
  ASSERT_FALSE(unclosed.is_ok());
  EXPECT_NE(unclosed.message().find(R"(a literal '{{' is written '\{{')"), std::string::npos) << unclosed.message();
}

TEST(PillSyntaxTest, Malformed_IsAnError) {
  EXPECT_FALSE(split_template("{{ oops").is_ok());
  EXPECT_FALSE(parse_pill("").is_ok());
  EXPECT_FALSE(parse_pill("a..b").is_ok());
  EXPECT_FALSE(parse_pill("a.").is_ok());
  EXPECT_FALSE(parse_pill("a[x]").is_ok());
  EXPECT_FALSE(parse_pill("a | ").is_ok());
}

}  // namespace
}  // namespace flowrt
