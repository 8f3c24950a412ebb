#include "server/http_message.h"

#include <algorithm>

#include "plans/value_json.h"

namespace flowrt::server {

Response text_response(http::status status, std::string_view content_type, std::string body) {
  Response res{status, 11};
  res.set(http::field::content_type, content_type);
  res.set(http::field::cache_control, "no-store");
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

Response json_response(http::status status, const Value& body) {
  std::string text;
  write_json(body, text);
  text += '\n';
  return text_response(status, "application/json", std::move(text));
}

Response error_response(http::status status, std::string_view message, std::string_view pointer) {
  const Value body = pointer.empty() ? Value::object({{"error", Value(message)}})
                                     : Value::object({{"error", Value(message)}, {"pointer", Value(pointer)}});
  return json_response(status, body);
}

Response unauthorized_response(std::string_view message) {
  Response res = error_response(http::status::unauthorized, message);
  res.set(http::field::www_authenticate, "Bearer");
  return res;
}

std::string utf8_prefix(std::string_view text, size_t max_bytes) {
  size_t cut = std::min(text.size(), max_bytes);
  while (cut < text.size() && cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut));
}

}  // namespace flowrt::server
