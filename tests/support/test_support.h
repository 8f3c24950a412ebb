// Small helpers the test files share. Header-only; nothing here touches an engine.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>
#include <thread>

#include "plans/time.h"
#include "plans/value.h"
#include "plans/value_json.h"

namespace flowrt::test_support {

// JSON text written in a test as a Value; fails the test (and gives null) when it does not parse.
inline Value json(std::string_view text) {
  Result<Value> v = parse_json(text);
  EXPECT_TRUE(v.is_ok()) << text;
  return v ? *v : Value();
}

// A path in the test temporary directory that names this process too: suites of two
// builds or two checkouts running at once never share (and delete) each other's files.
inline std::string temp_path(const std::string& stem) {
  return ::testing::TempDir() + stem + "-" + std::to_string(::getpid());
}

// The running test's name as one file name: a parameterised test's "Name/Param" would
// otherwise make a directory of "Name" that removing the test's own path leaves behind.
inline std::string current_test_file_name() {
  std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  return name;
}

// Removes a SQLite database file and its write-ahead log and shared-memory files.
inline void remove_sqlite_files(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
}

inline constexpr DurationMs kMinute = 60 * 1000;
inline constexpr DurationMs kHour = 60 * kMinute;

// Waits until `done()` holds, at most `limit` of real time; false if it never did. For what
// another thread does; the limit only turns a broken engine into a failure instead of a hang.
template <class F>
bool WaitFor(F done, std::chrono::milliseconds limit = std::chrono::milliseconds(20000)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace flowrt::test_support
