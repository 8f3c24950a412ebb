// The errors of `flowrt run`, as the JSON document lists them: objects
// {"file", "line", "pointer", "message"}, each null when it does not apply (an error of
// the whole run has no file; an error of a line of the events file has no pointer).
#pragma once

#include <string>
#include <vector>

#include "compiler/diagnostics.h"
#include "plans/value.h"

namespace flowrt::cli {

struct RunError {
  std::string file;     // "" when none
  size_t line = 0;      // 1-based; 0 when unknown
  std::string pointer;  // JSON pointer into `file`; "" with `has_pointer` false when none
  bool has_pointer = false;
  std::string message;

  Value to_value() const;
  // "file: /pointer: message", "file:line: message" or "message", as the table prints it.
  std::string describe() const;
};

// A definition or config diagnostic: its line is where the value at its pointer starts in
// the file (a syntax error's own "line L, column C" when it has one); a pointer to what is
// missing (a required key) gives the line of the nearest value around it that is there. An
// error of a whole file (pointer "") has no line, and a file larger than `max_file_bytes`
// (the limit it was read with: one refused for its size) is not read to find lines.
std::vector<RunError> run_errors(const Diagnostics& diags, size_t max_file_bytes);

// An error of the run: "EVENTS:LINE: message" and "EVENTS: message" (the harness's form)
// name the events file and line; anything else is the run's own.
RunError run_error(const std::string& message, const std::string& events_file);

// The line (1-based) at which the value `pointer` names starts in JSON `text`; 0 when
// the text has no such value.
size_t line_of_pointer(std::string_view text, std::string_view pointer);

}  // namespace flowrt::cli
