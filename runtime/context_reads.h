// Reading context records wherever they are: a context this engine runs or ran and still
// holds (ContextStore), one it ended while recovering and the store does not have yet
// (ContextArchive), or one that ended and left memory once its record was durable (the
// Store: history). The readers behind Engine::context and Engine::contexts, and so the
// `flowrt run` document and table.
//
// Order and consistency: a context leaves memory only after the store has its final
// record, so reading memory first and the store after never misses one; a context found in
// both is read from memory (the newer copy), but a resting one (Context::rest_when) from
// its row, which holds its record as it stands. Lists come in seq order.
// Thread-safety: any thread (each source has its own lock). Errors of the store are logged
// and the rest is returned.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "plans/value.h"

namespace flowrt {

class EngineCore;

// The record of context `id` ("ctx-<seq>"), or nullopt when there is none (or it was
// dropped by context_retention or deleted by history_retention).
std::optional<Value> read_context_record(const EngineCore& core, std::string_view id);
// Every context record of `flow` ("": of every flow), in seq order.
std::vector<Value> read_context_records(const EngineCore& core, std::string_view flow);

// One page of context records, newest first: those of `flow` and `status` ("": any) with
// a seq below `before_seq`, at most `limit`. Memory is scanned by its headers (no record is
// decoded but the page's); the store's history is read newest first, one page.
std::vector<Value> read_context_page(const EngineCore& core, std::string_view flow, std::string_view status,
                                     uint64_t before_seq, size_t limit);

// The records of the contexts in memory that have not ended (running, ready, waiting), newest
// first, with a seq below `before_seq`, at most `limit`: one pass over memory that tells
// ended from not ended, so a context moving between in_progress and waiting while it is
// read is not missed (as it can be between two pages of one status each).
std::vector<Value> read_unfinished_records(const EngineCore& core, uint64_t before_seq, size_t limit);

}  // namespace flowrt
