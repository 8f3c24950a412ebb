// Fuzz target: bytes -> a definition file.
//
// The input is the text of one definition file (one object or an array of them) and goes
// down both paths a user's file takes:
//   1. the loader and compiler on their own (compiler/loader.h, compiler/compiler.h):
//      parse_definitions, check_unique_ids, then compile_unit of every definition read, and
//      plan_to_value of every plan (what `flowrt plan` prints);
//   2. the engine (runtime/engine.h): Engine::load_text, then Engine::validate.
// Beyond "no crash, hang or leak" (the sanitizers and libFuzzer check those), it checks:
//   - text that is not JSON gives diagnostics;
//   - a definition that does not compile gives at least one diagnostic, and every
//     diagnostic has a message;
//   - a load that reports problems adds nothing to the engine (all or nothing).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/compiler.h"
#include "compiler/loader.h"
#include "compiler/plan_printer.h"
#include "plans/value_json.h"
#include "runtime/engine.h"
#include "runtime/engine_core.h"

namespace {

using namespace flowrt;

constexpr size_t kMaxInput = 64 * 1024;

[[noreturn]] void fail(const std::string& what, const Diagnostics* diags = nullptr) {
  std::fprintf(stderr, "definitions_fuzz: %s\n", what.c_str());
  if (diags) std::fprintf(stderr, "%s\n", diags->describe().c_str());
  std::abort();
}

void check_messages(const Diagnostics& diags) {
  for (const Diagnostic& d : diags.list()) {
    if (d.message.empty()) fail("a diagnostic without a message at '" + d.pointer + "'", &diags);
  }
}

// Published versions first, drafts when there is no published one.
class Lookup : public DefinitionLookup {
 public:
  explicit Lookup(const std::vector<Definition>& defs) {
    for (const Definition& d : defs) {
      auto key = std::make_pair(d.type, d.id);
      auto it = by_id_.find(key);
      if (it == by_id_.end() || (it->second->status == DefinitionStatus::kDraft &&
                                 d.status == DefinitionStatus::kPublished)) {
        by_id_[key] = &d;
      }
    }
  }
  const Definition* find(UnitType type, std::string_view id) const override {
    auto it = by_id_.find(std::make_pair(type, std::string(id)));
    return it == by_id_.end() ? nullptr : it->second;
  }

 private:
  std::map<std::pair<UnitType, std::string>, const Definition*> by_id_;
};

void compile_directly(std::string_view text) {
  Diagnostics diags;
  std::vector<Definition> defs;
  parse_definitions(text, "fuzz.json", &defs, &diags);
  check_unique_ids(defs, &diags);
  check_messages(diags);
  {
    Value v;
    JsonParseError error;
    if (!parse_json(text, &v, &error) && diags.empty()) fail("text that is not JSON gave no diagnostics");
  }
  Lookup lookup(defs);
  for (bool drafts : {false, true}) {
    CompileOptions options;
    options.allow_draft_dependencies = drafts;
    Compiler compiler(lookup, nullptr, options);
    for (const Definition& d : defs) {
      Diagnostics cd;
      std::shared_ptr<const Plan> plan = compiler.compile_unit(d, &cd);
      check_messages(cd);
      if (!plan) {
        if (cd.reported() == 0) fail(d.label() + " did not compile and gave no diagnostics");
        continue;
      }
      std::string out;
      write_json(plan_to_value(*plan), out);
    }
  }
}

void load_into_engine(std::string_view text) {
  EngineOptions options;
  options.log_level = "off";
  options.properties.worker_threads = 1;
  Engine engine(options);
  Diagnostics diags = engine.load_text(text, "fuzz.json");
  check_messages(diags);
  if (!diags.empty()) {
    if (!engine.core().flows.all_definitions().empty()) fail("a load with errors added definitions", &diags);
    return;
  }
  Diagnostics v = engine.validate();
  check_messages(v);
  for (const Diagnostic& d : v.list()) (void)d.describe();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxInput) return -1;  // not added to the corpus
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  compile_directly(text);
  load_into_engine(text);
  return 0;
}
