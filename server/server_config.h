// ServerConfig: how `flowrt serve` listens and whom it lets in. Read from the "server"
// section of a project's config.json:
//
//   "server": {"tokens": [{"name": "ci", "role": "operator", "token_sha256": "<64 hex>"}],
//              "limits": {"body_bytes": 1048576, "header_bytes": 16384,
//                         "request_timeout_ms": 30000, "idle_timeout_ms": 60000,
//                         "connections": 512, "stream_heartbeat_ms": 15000,
//                         "durable_answer_ms": 3600000, "idempotency_key_bytes": 67108864}}
//
// The file holds no secret: a token is kept as the SHA-256 of its text. Plain data; the
// reader reports every problem at once, each with the config's name and JSON pointer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/diagnostics.h"
#include "plans/value.h"
#include "server/auth.h"

namespace flowrt::server {

// Limits that keep one client from holding the server: each refused with a clear error.
struct ServerLimits {
  size_t body_bytes = 1u << 20;         // 413 past it
  size_t header_bytes = 16u << 10;      // 431 past it (the request line and headers)
  int64_t request_timeout_ms = 30000;   // a request must arrive whole within this (408)
  int64_t idle_timeout_ms = 60000;      // a kept-alive connection idle this long is closed
  size_t connections = 512;             // connections at once; more are answered 503 and closed
  int64_t stream_heartbeat_ms = 15000;  // an event stream sends a comment this often
  int64_t durable_answer_ms = 3600000;  // a write not durable within this is answered 503
  // The memory kept for Idempotency-Keys and their answers (a single server's); a new key
  // past it is answered 429 (runtime/keyed_writes.h).
  size_t idempotency_key_bytes = size_t{64} << 20;
};

struct ServerConfig {
  std::vector<TokenEntry> tokens;
  ServerLimits limits;
};

// Reads config.json's "server" section (`section` may be null: the defaults). Returns false
// with every problem in *diags (named `file`) when anything is wrong.
bool read_server_config(const Value* section, const std::string& file, ServerConfig* out, Diagnostics* diags);

}  // namespace flowrt::server
