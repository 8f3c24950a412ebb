// The sanitizers' options are compiled into every executable of a sanitizer build
// (cmake/sanitizer_options.cpp), so no test runner can drop them.
#include <gtest/gtest.h>

#include <string>

#if defined(__SANITIZE_ADDRESS__)
extern "C" const char* __asan_default_options();
extern "C" const char* __ubsan_default_options();

TEST(SanitizerOptionsTest, AddressAndUndefinedBehaviour_StopAtTheFirstReport) {
  EXPECT_NE(std::string(__asan_default_options()).find("abort_on_error=1"), std::string::npos);
  EXPECT_NE(std::string(__asan_default_options()).find("detect_leaks=1"), std::string::npos);
  EXPECT_NE(std::string(__ubsan_default_options()).find("halt_on_error=1"), std::string::npos);
  EXPECT_NE(std::string(__ubsan_default_options()).find("print_stacktrace=1"), std::string::npos);
}
#endif

#if defined(__SANITIZE_THREAD__)
extern "C" const char* __tsan_default_options();

TEST(SanitizerOptionsTest, Thread_StopsAtTheFirstReport_WithTheSuppressions) {
  const std::string options = __tsan_default_options();
  EXPECT_NE(options.find("halt_on_error=1"), std::string::npos);
  EXPECT_NE(options.find("scripts/tsan.supp"), std::string::npos);
}
#endif
