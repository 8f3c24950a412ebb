#include "server/history_reader.h"

#include <algorithm>
#include <utility>

#include "runtime/engine_log.h"
#include "store/postgres_store.h"
#include "store/store.h"

namespace flowrt::server {

int64_t HistoryReader::steady_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

HistoryReader::HistoryReader(const std::string& url, std::function<int64_t()> now_ms)
    : url_(with_timeouts(url)), now_ms_(std::move(now_ms)) {}

HistoryReader::~HistoryReader() = default;

std::string HistoryReader::with_timeouts(const std::string& url) {
  // To connect; for bytes sent and not acknowledged; and, with a read sent and
  // acknowledged and no answer coming, keepalives that find a server gone after about
  // kTimeoutSeconds (the server cancels a read it takes longer with: open()).
  const std::pair<const char*, std::string> limits[] = {
      {"connect_timeout", std::to_string(kTimeoutSeconds)},
      {"tcp_user_timeout", std::to_string(kTimeoutSeconds * 1000)},
      {"keepalives_idle", "1"},
      {"keepalives_interval", "1"},
      {"keepalives_count", std::to_string(std::max(kTimeoutSeconds - 1, 1))},
  };
  const bool uri = url.starts_with("postgresql://") || url.starts_with("postgres://");
  std::string out = url;
  for (const auto& [key, value] : limits) {
    out += uri ? (out.find('?') == std::string::npos ? "?" : "&") : " ";  // or the key=value form
    out += std::string(key) + "=" + value;
  }
  return out;
}

PostgresStore* HistoryReader::store(bool probe) {
  std::lock_guard lock(mu_);
  if (store_) return store_.get();
  // Waited for another read's open that failed: this one does not try it again now.
  if (!probe && failing_.load(std::memory_order_acquire)) return nullptr;
  Result<std::unique_ptr<PostgresStore>> opened =
      PostgresStore::open(url_, SyncMode::kNormal, /*read_only=*/true, /*lead_epoch=*/0, kTimeoutSeconds * 1000);
  if (!opened) {
    failed("opening the database to read ended contexts", opened.message());
    return nullptr;
  }
  store_ = std::move(opened).value();
  return store_.get();
}

bool HistoryReader::may_read(bool* probe) {
  *probe = false;
  if (!failing_.load(std::memory_order_acquire)) return true;
  if (now_ms_() < retry_at_ms_.load(std::memory_order_acquire)) return false;
  if (probing_.exchange(true, std::memory_order_acq_rel)) return false;  // another read tries
  *probe = true;
  return true;
}

void HistoryReader::failed(std::string_view what, const std::string& why) {
  retry_at_ms_.store(now_ms_() + kRetryMs, std::memory_order_release);
  if (!failing_.exchange(true, std::memory_order_acq_rel)) {
    engine_log().warn("cluster: {}: {}; reads of ended contexts go to the leader until it can be read", what, why);
  }
}

template <class T, class Read>
std::optional<T> HistoryReader::from_database(const std::string& what, Read&& read) {
  bool probe = false;
  if (!may_read(&probe)) return std::nullopt;
  struct EndProbe {
    std::atomic<bool>* probing;
    bool held;
    ~EndProbe() {
      if (held) probing->store(false, std::memory_order_release);
    }
  } end_probe{&probing_, probe};
  PostgresStore* s = store(probe);
  if (!s) return std::nullopt;
  Result<T> got = read(*s);
  if (!got) {
    failed(what, got.message());
    return std::nullopt;
  }
  if (failing_.exchange(false, std::memory_order_acq_rel)) {
    engine_log().info("cluster: the database is read again for ended contexts");
  }
  return std::move(got).value();
}

std::optional<Value> HistoryReader::ended_record(std::string_view id) {
  const std::optional<uint64_t> seq = context_seq_of(id);
  if (!seq) return std::nullopt;
  std::optional<std::optional<StoredContext>> stored = from_database<std::optional<StoredContext>>(
      "reading context " + std::string(id) + " from the database", [&](PostgresStore& s) { return s.load_context(*seq); });
  // As the leader reads a context that left its memory (runtime/context_reads.cpp): only
  // an ended one, with its record.
  if (!stored || !*stored || !is_final_context_status((**stored).status)) return std::nullopt;
  Value record = (**stored).record.value();
  if (!record.is_object()) return std::nullopt;
  return record;
}

std::optional<std::vector<Value>> HistoryReader::ended_page(std::string_view flow, std::string_view status,
                                                           uint64_t before_seq, size_t limit) {
  if (!is_final_context_status(status)) return std::nullopt;
  if (limit == 0 || before_seq <= 1) return std::vector<Value>();
  // The page the leader's list asks of its store (runtime/context_reads.cpp).
  ContextQuery q = newest_ended_page(flow, status, before_seq, limit);
  std::vector<Value> page;
  while (true) {
    std::optional<std::vector<StoredContext>> rows = from_database<std::vector<StoredContext>>(
        "listing contexts from the database", [&](PostgresStore& s) { return s.list_contexts(q); });
    if (!rows) return std::nullopt;
    // A context that ended without its record yet (the leader lists it from its memory)
    // is left out, and the page filled from further down.
    for (StoredContext& c : *rows) {
      if (Value record = c.record.value(); record.is_object() && page.size() < limit) page.push_back(std::move(record));
    }
    if (page.size() == limit || rows->size() < q.limit || rows->back().seq <= 1) return page;
    q.up_to_seq = rows->back().seq - 1;
  }
}

}  // namespace flowrt::server
