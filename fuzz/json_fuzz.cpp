// Fuzz target: bytes -> parse_json, checked against nlohmann::json (a strict, independent
// parser; tests/support/json_reference.h). Checks:
//   - both parsers accept the text with the same value (numbers of the same kind), or both
//     refuse it;
//   - a refusal has a message, a position inside the text and a JSON pointer (RFC 6901:
//     "" or tokens after '/', '~' only as "~0" or "~1") of at most 256 bytes of UTF-8;
//   - what was accepted, written back as JSON, parses again to the same value.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "plans/value_json.h"
#include "tests/support/json_reference.h"

namespace {

[[noreturn]] void fail(const char* what, std::string_view text, const std::string& ours, const std::string& theirs) {
  std::fprintf(stderr, "json_fuzz: %s\ntext: %.*s\nours: %s\nnlohmann: %s\n", what, static_cast<int>(text.size()),
               text.data(), ours.c_str(), theirs.c_str());
  std::abort();
}

bool well_formed_pointer(const std::string& p) {
  if (p.size() > 256 || !flowrt::is_well_formed_utf8(p)) return false;
  if (!p.empty() && p[0] != '/') return false;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '~' && (i + 1 == p.size() || (p[i + 1] != '0' && p[i + 1] != '1'))) return false;
  }
  return true;
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
    if (!well_formed_pointer(e.pointer)) fail("a refusal whose pointer is not a JSON pointer", text, e.pointer, "");
    return 0;
  }
  Value again;
  if (!parse_json(parsed.to_json(), &again, &e) || !json_reference::same(parsed, again)) {
    fail("written back, it does not parse to the same value", text, parsed.to_json(), e.describe());
  }
  return 0;
}
