// answer_keyed_write: how a single server (flowrt serve without --node) answers a write sent
// with an Idempotency-Key (Router::keyed_writes), through the engine's KeyedWrites
// (runtime/keyed_writes.h). The key is the caller's (keys of different callers are apart)
// and names one request: its method, target and body (a SHA-256 digest of them).
//  - New: the write runs as without the key (the routes, wrap_writes' wait for durability
//    included), its first commit marking the key in the same store batch; its answer is
//    kept, and given once that is durable too (for at most `answer_within` more, or until
//    the server drains: then it is given all the same), so that after any crash the same
//    request gets it again. Every status is kept but 503 and 504, which say the outcome is
//    not known (the key then stays marked as applied when the write committed, and is free
//    again when it did not). An answer never given (the client went away first) counts as not
//    known; what such a write started (Reply::started: a call's context) is kept with the
//    key's mark. The mark itself, written with a call's first commit, has the context's id
//    already (KeyedWrites::note_starts_context), for a crash before any answer.
//  - Sent again: the same status, body, Content-Type, Location and ETag as the first
//    answer, with `Idempotent-Replayed: true`, and nothing is done; when the write was
//    applied and its answer not kept, `200` {"applied": true, "note"} and what it started
//    (a call's "context_id"), when that was kept.
//  - Sent with another request: `422`, nothing done. While the first is being answered:
//    `409`, nothing done: send it again once it is.
//  - A new key while the keys kept fill their budget (KeyedWrites::set_limit_bytes): `429`
//    with Retry-After, nothing done.
// Thread-safety: on the thread that dispatches the request, as Router::dispatch; the reply
// it returns may be polled on another thread (the claim is ended there). The Engine
// outlives every reply.
#pragma once

#include <chrono>

#include "runtime/engine.h"
#include "server/auth.h"
#include "server/router.h"

namespace flowrt::server {

// The header a replayed answer carries.
inline constexpr std::string_view kReplayedHeader = "Idempotent-Replayed";

// How long an answer waits for its kept copy to be durable, unless the caller says.
inline constexpr std::chrono::milliseconds kKeptAnswerWithin{5000};

Reply answer_keyed_write(Engine& engine, const Router& router, const Request& req, const Caller& caller,
                         std::chrono::milliseconds answer_within = kKeptAnswerWithin);

}  // namespace flowrt::server
