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

}  // namespace
}  // namespace flowrt
