// Harness: applies an events file (SPEC section 11) to an Engine.
//
// JSON Lines, one op per line, applied in order; ops do not wait for the flows they
// trigger, `settle` is the barrier, and the file ends with an implicit settle. A bad line
// stops the run: it is reported with its line number and nothing after it is applied.
// Used by `flowrt run` and by tests. Not synchronized; one per run.
#pragma once

#include <string>
#include <string_view>

#include "runtime/engine.h"

namespace flowrt {

struct HarnessLimits {
  size_t max_file_bytes = 256u << 20;   // the whole events file
  size_t max_line_bytes = 16u << 20;    // one line
};

class Harness {
 public:
  explicit Harness(Engine& engine, HarnessLimits limits = {}) : engine_(engine), limits_(limits) {}

  // Applies the file at `path`; on a bad line returns "FILE:LINE: message".
  Status run_file(const std::string& path);
  // Applies events from text, named `name` in errors.
  Status run_text(std::string_view text, const std::string& name);
  // Applies one op (a parsed line).
  Status apply(const Value& op);

 private:
  Engine& engine_;
  HarnessLimits limits_;
};

}  // namespace flowrt
