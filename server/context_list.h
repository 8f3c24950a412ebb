// GET /api/contexts?flow=F&status=S&since=T&limit=N&cursor=C: the query checked, and the
// answer made from a page of context records. The leader's route reads the page from its
// engine; a cluster follower's, for an ended status, from the database (server/cluster_node.cpp):
// both check the query and build the answer here, so that they answer alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "plans/value.h"
#include "server/router.h"

namespace flowrt::server {

struct ContextListQuery {
  std::string flow;        // "": every flow
  std::string status;      // "": every status but queued
  std::string since;       // "" or an ISO 8601 time as format_time writes it
  size_t limit = 50;       // contexts on a page
  uint64_t before_seq = 0;  // the cursor: the page holds seqs below it
};

// The query, or nothing and `*error` the 400 to answer.
std::optional<ContextListQuery> parse_context_list(const ApiRequest& req, Response* error);

// The answer: {"contexts": [summaries], "next": cursor or null}. `page`: the records of
// up to limit + 1 contexts matching the query, newest first (one more than the page says
// whether a next one exists). The body keeps within kPageBodyBytes (server/api_common.h):
// it holds fewer summaries when more would pass that, and `next` is then the seq of the
// last one it holds.
Response context_list_response(const ContextListQuery& query, std::span<const Value> page);

}  // namespace flowrt::server
