#include "server/router.h"

#include <algorithm>

#include "plans/value_json.h"

namespace flowrt::server {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string encode_path_segment(std::string_view segment) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(segment.size());
  for (const char ch : segment) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

namespace {

// Percent-decodes `in`; in a query, '+' is a space. False on a bad escape.
bool decode(std::string_view in, bool query, std::string* out) {
  out->clear();
  out->reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return false;
      const int hi = hex_digit(in[i + 1]), lo = hex_digit(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out->push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && query) {
      out->push_back(' ');
    } else {
      out->push_back(c);
    }
  }
  return true;
}

std::vector<std::string> split_pattern(std::string_view pattern) {
  std::vector<std::string> out;
  size_t i = 1;
  while (i <= pattern.size()) {
    const size_t slash = pattern.find('/', i);
    const size_t end = slash == std::string_view::npos ? pattern.size() : slash;
    out.emplace_back(pattern.substr(i, end - i));
    i = end + 1;
  }
  if (out.size() == 1 && out[0].empty()) out.clear();  // "/"
  return out;
}

}  // namespace

bool split_target(std::string_view target, std::vector<std::string>* segments,
                  std::map<std::string, std::string, std::less<>>* query) {
  // Names and values from the target reach records and answers: they must be UTF-8 as
  // written and once decoded.
  if (target.empty() || target[0] != '/' || !is_well_formed_utf8(target)) return false;
  const size_t q = target.find('?');
  const std::string_view path = target.substr(0, q);
  segments->clear();
  if (path.size() > 1) {
    size_t i = 1;
    while (i <= path.size()) {
      const size_t slash = path.find('/', i);
      const size_t end = slash == std::string_view::npos ? path.size() : slash;
      std::string seg;
      if (!decode(path.substr(i, end - i), false, &seg) || !is_well_formed_utf8(seg)) return false;
      segments->push_back(std::move(seg));
      i = end + 1;
    }
    if (!segments->empty() && segments->back().empty()) segments->pop_back();  // a trailing '/'
  }
  query->clear();
  if (q == std::string_view::npos) return true;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    std::string key, value;
    if (!decode(pair.substr(0, eq), true, &key) || !is_well_formed_utf8(key)) return false;
    if (eq != std::string_view::npos && (!decode(pair.substr(eq + 1), true, &value) || !is_well_formed_utf8(value))) {
      return false;
    }
    query->emplace(std::move(key), std::move(value));  // the first of a repeated name counts
  }
  return true;
}

void Router::add(http::verb method, std::string_view pattern, Permission permission, Handler handler) {
  routes_.push_back(Route{method, split_pattern(pattern), permission, std::move(handler)});
}

bool Router::match(const Route& r, const std::vector<std::string>& segments,
                   std::map<std::string, std::string, std::less<>>* params) {
  if (r.segments.size() != segments.size()) return false;
  params->clear();
  for (size_t i = 0; i < segments.size(); ++i) {
    const std::string& p = r.segments[i];
    if (p.size() > 2 && p.front() == '{' && p.back() == '}') {
      if (segments[i].empty()) return false;
      params->emplace(p.substr(1, p.size() - 2), segments[i]);
    } else if (p != segments[i]) {
      return false;
    }
  }
  return true;
}

bool Router::is_public(const Request& req) const {
  std::vector<std::string> segments;
  std::map<std::string, std::string, std::less<>> query, params;
  if (!split_target(req.target(), &segments, &query)) return false;
  bool matched = false;
  for (const Route& r : routes_) {
    if (!match(r, segments, &params)) continue;
    const bool same = r.method == req.method() || (r.method == http::verb::get && req.method() == http::verb::head);
    if (same) matched = true;
    if (r.permission == Permission::kPublic && same) return true;
  }
  return !matched && fallback_ != nullptr;
}

namespace {

bool is_write(http::verb method) {
  return method == http::verb::post || method == http::verb::put || method == http::verb::patch ||
         method == http::verb::delete_;
}

bool valid_idempotency_key(std::string_view key) {
  if (key.empty() || key.size() > kMaxIdempotencyKey) return false;
  return std::all_of(key.begin(), key.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

}  // namespace

Reply Router::dispatch(const Request& req, const Caller& caller, bool wrapped) const {
  // Reads never look for the header (the check is on every request's path).
  const auto key = is_write(req.method()) ? req.find(kIdempotencyKeyHeader) : req.end();
  if (key != req.end()) {
    if (!valid_idempotency_key(key->value())) {
      return error_response(http::status::bad_request, "the Idempotency-Key header must be 1 to " +
                                                           std::to_string(kMaxIdempotencyKey) +
                                                           " visible ASCII characters");
    }
    if (!keyed_) {
      return error_response(http::status::bad_request,
                            "this server does not remember Idempotency-Key (only the nodes of a cluster do: flowrt "
                            "serve --node): send the request without it");
    }
    if (!caller.authenticated) return unauthorized_response(kTokenNeeded);
    return keyed_(req, caller);
  }
  std::vector<std::string> segments;
  ApiRequest api{req, caller, {}, {}};
  if (!split_target(req.target(), &segments, &api.query)) {
    return error_response(http::status::bad_request,
                          "the request target is not a valid path (a bad % escape, or not UTF-8)");
  }
  std::vector<std::string> allowed;
  for (const Route& r : routes_) {
    if (!match(r, segments, &api.params)) continue;
    const bool same = r.method == req.method() || (r.method == http::verb::get && req.method() == http::verb::head);
    if (!same) {
      allowed.emplace_back(http::to_string(r.method));
      continue;
    }
    if (!role_allows(caller.role, r.permission)) {
      return error_response(http::status::forbidden, "'" + caller.name + "' (role " + std::string(role_name(caller.role)) +
                                                         ") may not " + std::string(permission_name(r.permission)));
    }
    if (wrapped && wrap_writes_ && is_write(req.method())) return wrap_writes_([&] { return r.handler(api); });
    return r.handler(api);
  }
  if (fallback_) return fallback_(req, caller);
  if (allowed.empty()) {
    // The target as sent (UTF-8: split_target checked it).
    return error_response(http::status::not_found, "no such route: " + utf8_prefix(req.target(), 200));
  }
  std::sort(allowed.begin(), allowed.end());
  allowed.erase(std::unique(allowed.begin(), allowed.end()), allowed.end());
  std::string allow;
  for (const std::string& m : allowed) allow += (allow.empty() ? "" : ", ") + m;
  Response res = error_response(http::status::method_not_allowed,
                                std::string(req.method_string()) + " is not allowed here (allowed: " + allow + ")");
  res.set(http::field::allow, allow);
  return res;
}

}  // namespace flowrt::server
