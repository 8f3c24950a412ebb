#include "tests/store/crash_copy.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

namespace flowrt::testing {

void copy_durable_state(const std::string& from, const std::string& to) {
  sqlite3* src = nullptr;
  sqlite3* dst = nullptr;
  ASSERT_EQ(sqlite3_open_v2(from.c_str(), &src, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_open(to.c_str(), &dst), SQLITE_OK);
  sqlite3_backup* b = sqlite3_backup_init(dst, "main", src, "main");
  ASSERT_NE(b, nullptr) << sqlite3_errmsg(dst);
  EXPECT_EQ(sqlite3_backup_step(b, -1), SQLITE_DONE);
  sqlite3_backup_finish(b);
  sqlite3_close(dst);
  sqlite3_close(src);
}

}  // namespace flowrt::testing
