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
// A reply with a body of another type (the viewer's files, the metrics text).
Response text_response(http::status status, std::string_view content_type, std::string body);

}  // namespace flowrt::server
