#include "server/history_reader.h"

#include "runtime/engine_log.h"
#include "store/postgres_store.h"
#include "store/store.h"

namespace flowrt::server {

HistoryReader::HistoryReader(std::string url) : url_(std::move(url)) {}

HistoryReader::~HistoryReader() = default;

PostgresStore* HistoryReader::store() {
  std::lock_guard lock(mu_);
  if (store_) return store_.get();
  const auto now = std::chrono::steady_clock::now();
  if (now < next_try_) return nullptr;
  Result<std::unique_ptr<PostgresStore>> opened = PostgresStore::open(url_, SyncMode::kNormal, /*read_only=*/true);
  if (!opened) {
    next_try_ = now + std::chrono::milliseconds(kRetryOpenMs);
    engine_log().warn("cluster: reads of ended contexts go to the leader for now: {}", opened.message());
    return nullptr;
  }
  store_ = std::move(opened).value();
  return store_.get();
}

std::optional<Value> HistoryReader::ended_record(std::string_view id) {
  const std::optional<uint64_t> seq = context_seq_of(id);
  if (!seq) return std::nullopt;
  PostgresStore* s = store();
  if (!s) return std::nullopt;
  Result<std::optional<StoredContext>> stored = s->load_context(*seq);
  if (!stored) {
    engine_log().warn("cluster: reading context {} from the database: {}", id, stored.message());
    return std::nullopt;
  }
  // As the leader reads a context that left its memory (runtime/context_reads.cpp): only
  // an ended one, with its record.
  if (!*stored || !is_final_context_status((*stored)->status) || !(*stored)->record.is_object()) return std::nullopt;
  return std::move((*stored)->record);
}

}  // namespace flowrt::server
