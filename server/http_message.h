// The HTTP messages of the server (Boost.Beast, string bodies) and the JSON replies every
// route gives: a body of JSON, or an error {"error": MESSAGE, "pointer": P?}.
#pragma once

#include <boost/beast/http.hpp>

#include <string>
#include <string_view>

#include "plans/value.h"

namespace flowrt::server {

namespace http = boost::beast::http;
using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

// A JSON reply with `status`.
Response json_response(http::status status, const Value& body);
// {"error": message, "pointer": pointer (when not empty)} with `status`.
Response error_response(http::status status, std::string_view message, std::string_view pointer = {});
// 401 with `message` and WWW-Authenticate: Bearer.
Response unauthorized_response(std::string_view message);
// The 401 message for a request without a valid token.
inline constexpr std::string_view kTokenNeeded = "a valid token is needed: Authorization: Bearer TOKEN";
// The first `max_bytes` of well-formed UTF-8 `text` or fewer, cut at a character's start:
// for quoting what a client sent in an error message, which must stay UTF-8.
std::string utf8_prefix(std::string_view text, size_t max_bytes);
// A reply with a body of another type (the viewer's files, the metrics text).
Response text_response(http::status status, std::string_view content_type, std::string body);

}  // namespace flowrt::server
