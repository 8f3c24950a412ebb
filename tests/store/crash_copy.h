// The data file as a crash of its writer would leave it now: what is durable (the last
// transaction written), copied through SQLite's backup API from a reader, as a second
// process would see it. For tests that recover an engine from every point of a run.
#pragma once

#include <string>

namespace flowrt::testing {

// Copies `from` (open for writing elsewhere, or not) to a new file `to`. Fails the
// calling test (gtest) when SQLite cannot.
void copy_durable_state(const std::string& from, const std::string& to);

}  // namespace flowrt::testing
