#include "server/server_config.h"

#include "plans/value_json.h"

namespace flowrt::server {
namespace {

// A positive integer member of `limits`, within [1, max].
void read_limit(const Value& limits, std::string_view key, int64_t max, const std::string& file, int64_t* out,
                Diagnostics* diags) {
  const Value* v = limits.find(key);
  if (!v) return;
  const std::string pointer = pointer_append("/server/limits", key);
  if (!v->is_int() || v->as_int() < 1 || v->as_int() > max) {
    diags->add(file, pointer, "must be an integer from 1 to " + std::to_string(max));
    return;
  }
  *out = v->as_int();
}

void read_tokens(const Value& tokens, const std::string& file, ServerConfig* out, Diagnostics* diags) {
  if (!tokens.is_array()) {
    diags->add(file, "/server/tokens", "must be an array of {\"name\", \"role\", \"token_sha256\"}");
    return;
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    const Value& t = tokens.at(i);
    const std::string at = pointer_append("/server/tokens", i);
    if (!t.is_object()) {
      diags->add(file, at, "must be an object {\"name\", \"role\", \"token_sha256\"}");
      continue;
    }
    for (const auto& m : t.members()) {
      const std::string_view key = m.key.as_string();
      if (key != "name" && key != "role" && key != "token_sha256") {
        diags->add(file, pointer_append(at, key), "unknown token key (expected name, role, token_sha256)");
      }
    }
    TokenEntry entry;
    const Value& name = t["name"];
    if (!name.is_string() || name.as_string().empty()) {
      diags->add(file, pointer_append(at, "name"), "must be a non-empty string");
    } else {
      entry.name = std::string(name.as_string());
    }
    const Value& role = t["role"];
    std::optional<Role> r = role.is_string() ? role_from_name(role.as_string()) : std::nullopt;
    if (!r) {
      diags->add(file, pointer_append(at, "role"), "must be one of viewer, operator, designer, admin");
    } else {
      entry.role = *r;
    }
    const Value& hash = t["token_sha256"];
    std::optional<std::string> digest = hash.is_string() ? from_hex(hash.as_string()) : std::nullopt;
    if (!digest) {
      diags->add(file, pointer_append(at, "token_sha256"),
                 "must be the token's SHA-256 as 64 hex digits (e.g. printf %s TOKEN | sha256sum)");
    } else {
      entry.sha256 = std::move(*digest);
      // One token, one caller: a second entry of the same token would give it a second name
      // and role, and which one a request got would depend on the lookup.
      for (size_t j = 0; j < out->tokens.size(); ++j) {
        if (out->tokens[j].sha256 == entry.sha256) {
          diags->add(file, pointer_append(at, "token_sha256"),
                     "the same token as " + pointer_append("/server/tokens", j) + " (" + out->tokens[j].name +
                         "): a token has one name and one role");
          break;
        }
      }
    }
    out->tokens.push_back(std::move(entry));
  }
}

}  // namespace

bool read_server_config(const Value* section, const std::string& file, ServerConfig* out, Diagnostics* diags) {
  ServerConfig config;
  const size_t before = diags->size();
  if (section) {
    if (!section->is_object()) {
      diags->add(file, "/server", "must be an object with tokens and limits");
      return false;
    }
    for (const auto& m : section->members()) {
      const std::string_view key = m.key.as_string();
      if (key != "tokens" && key != "limits") {
        diags->add(file, pointer_append("/server", key), "unknown server key (expected tokens, limits)");
      }
    }
    if (const Value* tokens = section->find("tokens")) read_tokens(*tokens, file, &config, diags);
    if (const Value* limits = section->find("limits")) {
      if (!limits->is_object()) {
        diags->add(file, "/server/limits", "must be an object");
      } else {
        for (const auto& m : limits->members()) {
          const std::string_view key = m.key.as_string();
          if (key != "body_bytes" && key != "header_bytes" && key != "request_timeout_ms" && key != "idle_timeout_ms" &&
              key != "connections" && key != "stream_heartbeat_ms" && key != "durable_answer_ms" &&
              key != "idempotency_key_bytes") {
            diags->add(file, pointer_append("/server/limits", key),
                       "unknown limit (expected body_bytes, header_bytes, request_timeout_ms, idle_timeout_ms, "
                       "connections, stream_heartbeat_ms, durable_answer_ms, idempotency_key_bytes)");
          }
        }
        ServerLimits& l = config.limits;
        int64_t body = static_cast<int64_t>(l.body_bytes), header = static_cast<int64_t>(l.header_bytes),
                connections = static_cast<int64_t>(l.connections),
                key_bytes = static_cast<int64_t>(l.idempotency_key_bytes);
        read_limit(*limits, "body_bytes", int64_t{1} << 30, file, &body, diags);
        read_limit(*limits, "header_bytes", int64_t{1} << 20, file, &header, diags);
        read_limit(*limits, "request_timeout_ms", 3600000, file, &l.request_timeout_ms, diags);
        read_limit(*limits, "idle_timeout_ms", 3600000, file, &l.idle_timeout_ms, diags);
        read_limit(*limits, "connections", 100000, file, &connections, diags);
        read_limit(*limits, "stream_heartbeat_ms", 3600000, file, &l.stream_heartbeat_ms, diags);
        read_limit(*limits, "durable_answer_ms", 86400000, file, &l.durable_answer_ms, diags);
        read_limit(*limits, "idempotency_key_bytes", int64_t{1} << 40, file, &key_bytes, diags);
        l.body_bytes = static_cast<size_t>(body);
        l.header_bytes = static_cast<size_t>(header);
        l.connections = static_cast<size_t>(connections);
        l.idempotency_key_bytes = static_cast<size_t>(key_bytes);
      }
    }
  }
  if (diags->size() != before) return false;
  *out = std::move(config);
  return true;
}

}  // namespace flowrt::server
