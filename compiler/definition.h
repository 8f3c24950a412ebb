// Definition: one flow, subflow or action as the user wrote it, with where it came from.
//
// read_definition checks the top-level shape (id, type, status, active) so that the
// definition can be registered; everything deeper is checked when it is compiled. A
// Definition is an immutable value once read; safe to share.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compiler/diagnostics.h"
#include "plans/plan.h"
#include "plans/value.h"

namespace flowrt {

enum class DefinitionStatus : uint8_t { kDraft, kPublished };
std::string_view status_name(DefinitionStatus s);

struct Definition {
  UnitType type = UnitType::kFlow;
  std::string id;
  std::string name;
  DefinitionStatus status = DefinitionStatus::kPublished;
  bool active = true;             // flows only
  Value source;                   // the JSON object as written
  std::string file;               // "" when built in code
  std::string pointer;            // where in the file: "" or "/2" for the third of an array
  std::string fingerprint;        // 16 hex digits over the canonical JSON of `source`

  std::string label() const;      // "flow 'assign_p1'"
};

// Reads the top level of one definition object. Returns false (and adds diagnostics) when
// it cannot even be identified (no valid id or type).
bool read_definition(const Value& v, const std::string& file, const std::string& pointer, Definition* out,
                     Diagnostics* diags);

// The top-level key that names a definition file's JSON Schema (schemas/definition.schema.json).
// It is allowed in every definition and ignored: it is not compiled and not fingerprinted.
inline constexpr std::string_view kSchemaKey = "$schema";

// A definition's fingerprint: fingerprint_of without its top-level "$schema", so that
// adding or changing "$schema" does not change the plan version.
std::string definition_fingerprint(const Value& definition);

// 64-bit fingerprint of a value's canonical JSON (object keys sorted), as 16 hex digits.
std::string fingerprint_of(const Value& v);
uint64_t fingerprint64(const Value& v);
std::string hex64(uint64_t v);
// FNV-1a over bytes, for combining fingerprints.
uint64_t hash_bytes(std::string_view bytes, uint64_t seed = 14695981039346656037ull);

// True when `id` matches [A-Za-z0-9_.-]{1,128}.
bool valid_id(std::string_view id);

}  // namespace flowrt
