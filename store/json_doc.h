// JsonDoc: a JSON document a store change carries, held as a Value or as its text, as the
// side that made it had it. A context's final record is written as text by the thread that
// ended the context (runtime/record_json.h, write_record_json), which costs a fraction of
// building it as a Value first; a store writes that text as it is. Readers take value().
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "plans/value.h"

namespace flowrt {

// One JSON document, or none (null). Made from a Value (implicitly: a Value is a document)
// or from text with from_text; either way text() gives the bytes write_json writes for the
// document's Value. A plain value type: copies are independent; not for concurrent
// modification.
class JsonDoc {
 public:
  JsonDoc() = default;
  JsonDoc(Value v) : value_(std::move(v)) {}  // NOLINT: implicit, a Value is a document
  // REQUIRES: `json` is the compact JSON text of a document (what write_json writes).
  static JsonDoc from_text(std::string json);

  bool is_null() const { return text_.empty() && value_.is_null(); }
  // The document as a Value: the one it was made from, or its text parsed (null when the
  // text is not JSON, which from_text's contract rules out).
  Value value() const;
  // Its compact JSON text: the text it was made from, without a copy, or the Value's,
  // written into `scratch`.
  std::string_view text(std::string& scratch) const;

 private:
  Value value_;
  std::string text_;
};

}  // namespace flowrt
