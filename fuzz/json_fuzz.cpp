// Fuzz target: bytes -> parse_json, checked against nlohmann::json (a strict, independent
// parser; tests/support/json_reference.h). Checks:
//   - both parsers accept the text with the same value (numbers of the same kind), or both
//     refuse it;
//   - a refusal has a message and a position inside the text;
//   - what was accepted, written back as JSON, parses again to the same value.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "plans/value_json.h"
#include "tests/support/json_reference.h"

namespace {

[[noreturn]] void fail(const char* what, std::string_view text, const std::string& ours, const std::string& theirs) {
  std::fprintf(stderr, "json_fuzz: %s\ntext: %.*s\nours: %s\nnlohmann: %s\n", what, static_cast<int>(text.size()),
               text.data(), ours.c_str(), theirs.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flowrt;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const json_reference::Verdict v = json_reference::compare(text);
  if (!v.agree) fail("the parsers disagree", text, v.ours, v.reference);
  Value parsed;
  JsonParseError e;
  if (!parse_json(text, &parsed, &e)) {
    if (e.message.empty() || e.offset > text.size()) fail("a refusal without a message or a position", text, v.ours, "");
    return 0;
  }
  Value again;
  if (!parse_json(parsed.to_json(), &again, &e) || !json_reference::same(parsed, again)) {
    fail("written back, it does not parse to the same value", text, parsed.to_json(), e.describe());
  }
  return 0;
}
