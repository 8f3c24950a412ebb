#include "store/json_doc.h"

#include "plans/value_json.h"

namespace flowrt {

JsonDoc JsonDoc::from_text(std::string json) {
  JsonDoc d;
  d.text_ = std::move(json);
  return d;
}

Value JsonDoc::value() const {
  if (text_.empty()) return value_;
  Result<Value> v = parse_json(text_);
  return v.is_ok() ? std::move(*v) : Value();
}

std::string_view JsonDoc::text(std::string& scratch) const {
  if (!text_.empty()) return text_;
  scratch.clear();
  write_json(value_, scratch);
  return scratch;
}

}  // namespace flowrt
