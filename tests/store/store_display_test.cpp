// data_for_display (store/store.h): what flowrt inspect shows of a --data value.
#include <gtest/gtest.h>

#include "store/store.h"

namespace flowrt {
namespace {

TEST(DataForDisplayTest, ADatabaseUrlsPassword_IsShownAsStars_AnythingElseAsItIs) {
  EXPECT_EQ(data_for_display("postgresql://app:s3cret@db.example:5432/flows?options=-csearch_path%3Dprod"),
            "postgresql://app:***@db.example:5432/flows?options=-csearch_path%3Dprod");
  EXPECT_EQ(data_for_display("postgres://app:p%40ss@db/flows"), "postgres://app:***@db/flows")
      << "an encoded @ in the password is not its end";
  EXPECT_EQ(data_for_display("postgresql://app:@db/flows"), "postgresql://app:***@db/flows");
  EXPECT_EQ(data_for_display("postgresql://db/flows?user=app&password=s3cret&sslmode=require"),
            "postgresql://db/flows?user=app&password=***&sslmode=require");
  EXPECT_EQ(data_for_display("postgresql://app:a@db/x?password=b"), "postgresql://app:***@db/x?password=***");
  EXPECT_EQ(data_for_display("postgresql://?password=b"), "postgresql://?password=***");
  // Nothing to hide: as it is.
  for (const char* same : {"postgresql://app@db:5432/flows", "postgresql://db/flows?user=app&passwords=x",
                           "postgresql://", "postgresql://[::1]:5432/flows", "postgresql://db/a@b",
                           "data/flowrt.db", "/tmp/app:s3cret@x.db", ""}) {
    EXPECT_EQ(data_for_display(same), same);
  }
}

// libpq quotes the parts of a URL it cannot read, a password among them.
TEST(DataForDisplayTest, AUrlsPasswordsInLibpqsQuotes_AreShownAsStars_ItsOwnWordsAreNot) {
  EXPECT_EQ(hide_url_passwords(R"(invalid percent-encoded token: "s3%zzcret")", "postgresql://x:s3%zzcret@db/x"),
            R"(invalid percent-encoded token: "***")");
  EXPECT_EQ(hide_url_passwords(R"(end of string reached in URI: "postgresql://x:s3cret@[bad")", "postgresql://x:s3cret@[bad"),
            R"(end of string reached in URI: "postgresql://x:***@[bad")");
  EXPECT_EQ(hide_url_passwords(R"("a" and "pa" then "b")", "postgresql://u:a@db/x?password=b"), R"("***" and "p***" then "***")");
  EXPECT_EQ(hide_url_passwords("an invalid token, unquoted: a", "postgresql://u:a@db/x"), "an invalid token, unquoted: a")
      << "libpq's own words are left as they are";
  EXPECT_EQ(hide_url_passwords(R"(unclosed "a)", "postgresql://u:a@db/x"), R"(unclosed "a)");
  EXPECT_EQ(hide_url_passwords(R"(quoted "x")", "data/flowrt.db"), R"(quoted "x")");
}

}  // namespace
}  // namespace flowrt
