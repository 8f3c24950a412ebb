// Reading definition files: JSON text -> Definitions, with every problem as a Diagnostic.
//
// Syntax errors name the file with line and column; a file may hold one definition object
// or an array of them. Directories are read recursively (*.json, in path order). Free
// functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compiler/definition.h"
#include "compiler/diagnostics.h"
#include "plans/value_json.h"

namespace flowrt {

// The budgets of one load (engine properties of the same names).
struct LoadOptions {
  size_t max_file_bytes = 64u << 20;     // one file, checked before it is read (max_definition_file_bytes)
  JsonLimits json;                       // per file: nesting depth, string length
  size_t max_definitions = 100000;       // across everything loaded at once (max_definitions)
};

// Parses definitions from `text`, which came from `file`.
void parse_definitions(std::string_view text, const std::string& file, std::vector<Definition>* out,
                       Diagnostics* diags, const LoadOptions& options = {});

// Loads every definition under `paths` (files or directories).
std::vector<Definition> load_definitions(const std::vector<std::string>& paths, Diagnostics* diags,
                                         const LoadOptions& options = {});

// Reports ids used twice for the same type, naming both places.
void check_unique_ids(const std::vector<Definition>& defs, Diagnostics* diags);

// Reads a whole file, refusing one larger than `max_bytes` before reading it; the error
// names `budget` (the property that sets the limit) when given. A file whose size is not
// known beforehand (a pipe such as /dev/stdin or a shell's <(...), a FIFO) is read to its
// end and refused once it passes `max_bytes`.
Result<std::string> read_file(const std::string& path, size_t max_bytes, std::string_view budget = {});

}  // namespace flowrt
