// Harness: applies an events file (SPEC section 11) to an Engine.
//
// JSON Lines, one op per line, applied in order; ops do not wait for the flows they
// trigger, `settle` is the barrier, and the file ends with an implicit settle. A bad line
// stops the run: it is reported with its line number and nothing after it is applied.
// Used by `flowrt run` and by tests. Not synchronized; one per run. Its budgets are the
// engine's properties: max_events_file_bytes for the file (checked before it is read),
// max_json_depth and max_string_bytes for each line (read again at each line, so a
// set_property op applies from the next line on).
//
// With worker_threads 1, a line is applied only once every context the lines before it
// started has run as far as it can at the current instant (nothing is fired and the clock
// does not move): the one worker and the lines never race, so the same files give the
// same run, commit for commit. With more workers the lines race the flows they trigger,
// as real traffic does.
//
// An op filter (none by default, and none in `flowrt run`) sees each parsed op before it
// is applied and returns the op to apply, possibly changed, or an error that stops the run
// as a bad line does. Tools that must bound what a file may ask for (the fuzz target) use
// it, so that they read the file exactly as `flowrt run` does.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "flowrt/runtime/engine.h"

namespace flowrt {

class Harness {
 public:
  using OpFilter = std::function<Result<Value>(const Value& op)>;

  explicit Harness(Engine& engine) : engine_(engine) {}
  // Every op that run_text and run_file read passes through `filter` (see the top).
  void set_op_filter(OpFilter filter) { filter_ = std::move(filter); }

  // Applies the file at `path`; on a bad line returns "FILE:LINE: message".
  Status run_file(const std::string& path);
  // Applies events from text, named `name` in errors.
  Status run_text(std::string_view text, const std::string& name);
  // Applies one op (a parsed line).
  Status apply(const Value& op);

 private:
  Engine& engine_;
  OpFilter filter_;
};

}  // namespace flowrt
