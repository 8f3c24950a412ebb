// What the durable stores (sqlite_rows.h, postgres_rows.h) read back the same way: the
// limits stored JSON is parsed with, the columns a context row is read by, and the error a
// damaged row is. Internal to store/; free functions and constants, no state.
#pragma once

#include <string>
#include <string_view>

#include "plans/result.h"
#include "plans/value_json.h"

namespace flowrt::stored_rows {

// Stored JSON was written by the engine within its budgets; reading it back allows more
// than any budget so that nothing stored is refused; its objects share key lists, since
// what a store reads back (records, triggers, waiting contexts) is kept long.
inline const JsonLimits kStoredJson{SIZE_MAX, 100000, SIZE_MAX, /*shared_shapes=*/true};

// The columns a context is read by, in this order: the same in `contexts` (live) and
// `history` (ended) rows; a checkpoint column follows where there is one.
inline constexpr const char* kContextColumns =
    "seq, id, flow, status, commit_seq, trigger, inputs, cause, run_key, started, ended, record";

// "WHERE: a damaged row (WHAT)", and ": DETAIL" when there is one. WHERE names the file or
// the database.
inline Error damaged_row(const std::string& where, std::string_view what, std::string_view detail = {}) {
  std::string message = where + ": a damaged row (" + std::string(what) + ")";
  if (!detail.empty()) message += ": " + std::string(detail);
  return Error{std::move(message)};
}

// Stored JSON `text` parsed into *out; a text that does not parse is a damaged row, the
// error naming `where` and `what` the row is.
inline Status parse_stored_json(std::string_view text, const std::string& where, std::string_view what, Value* out) {
  JsonParseError e;
  if (parse_json(text, out, &e, kStoredJson)) return Status::ok();
  return damaged_row(where, what, e.describe());
}

}  // namespace flowrt::stored_rows
