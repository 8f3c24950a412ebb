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

struct LoadOptions {
  JsonLimits json;                       // per file: size, nesting depth, string length
  size_t max_definitions = 100000;       // across everything loaded at once
};

// Parses definitions from `text`, which came from `file`.
void parse_definitions(std::string_view text, const std::string& file, std::vector<Definition>* out,
                       Diagnostics* diags, const LoadOptions& options = {});

// Loads every definition under `paths` (files or directories).
std::vector<Definition> load_definitions(const std::vector<std::string>& paths, Diagnostics* diags,
                                         const LoadOptions& options = {});

// Reports ids used twice for the same type, naming both places.
void check_unique_ids(const std::vector<Definition>& defs, Diagnostics* diags);

// Reads a whole file, refusing one larger than `max_bytes`.
Result<std::string> read_file(const std::string& path, size_t max_bytes);

}  // namespace flowrt
