// ExprCompiler: JSON values with pills -> Templates; condition objects -> Conditions.
//
// What a pill's path means (which step, which variable) is asked of a PillResolver, so the
// same code compiles templates in flows, in subflows, in triggers and in the events file's
// `where`. Reports problems to Diagnostics and goes on. One per compile; not synchronized.
#pragma once

#include <string>
#include <vector>

#include "compiler/diagnostics.h"
#include "compiler/pill_syntax.h"
#include "plans/condition.h"
#include "plans/template.h"

namespace flowrt {

class PillResolver {
 public:
  virtual ~PillResolver() = default;
  // Sets pill->root, slot, index, name and path from `path`; returns "" or what is wrong.
  virtual std::string resolve(const std::vector<std::string>& path, Pill* pill) const = 0;
  // Does pill root `root` have a previous value (for changes, changes_to, changes_from)?
  virtual bool has_previous(PillRoot root) const = 0;
};

// What "field" means in a condition.
enum class FieldMode : uint8_t {
  kNotAllowed,       // no record under test here
  kRecordUnderTest,  // the record a lookup, wait or trigger tests (root kField)
  kTriggerRecord,    // flow logic: a field of trigger.record
};

class ExprCompiler {
 public:
  ExprCompiler(const PillResolver& resolver, std::string file, Diagnostics* diags, size_t max_template_bytes = 65536);

  Template compile_template(const Value& v, const std::string& pointer);
  // `field_has_previous`: the record under test has a previous version (update triggers, waits).
  Condition compile_condition(const Value& v, const std::string& pointer, FieldMode field_mode,
                              bool field_has_previous);
  bool compile_pill(const PillSyntax& syntax, const std::string& pointer, Pill* out);

  // Builds the path segments of a pill from text segments.
  static std::vector<PathSegment> make_path(const std::vector<std::string>& segments, size_t from);

 private:
  Template compile_string(const Value& v, const std::string& pointer);
  bool compile_transform(const TransformSyntax& t, const PillSyntax& pill, const std::string& pointer, Transform* out);

  const PillResolver& resolver_;
  std::string file_;
  Diagnostics* diags_;
  size_t max_template_bytes_;
};

}  // namespace flowrt
