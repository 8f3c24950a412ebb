#include "store/store.h"

#include <algorithm>
#include <charconv>
#include <utility>
#include <vector>

#include "store/memory_store.h"
#include "store/postgres_store.h"
#include "store/sqlite_store.h"

namespace flowrt {

std::string_view sync_mode_name(SyncMode m) {
  switch (m) {
    case SyncMode::kFull: return "full";
    case SyncMode::kNormal: return "normal";
    case SyncMode::kOff: return "off";
  }
  return "normal";
}

bool parse_sync_mode(std::string_view name, SyncMode* out) {
  if (name == "full") *out = SyncMode::kFull;
  else if (name == "normal") *out = SyncMode::kNormal;
  else if (name == "off") *out = SyncMode::kOff;
  else return false;
  return true;
}

bool is_final_context_status(std::string_view status) {
  return status == "completed" || status == "cancelled" || status == "error";
}

std::optional<uint64_t> context_seq_of(std::string_view id) {
  if (!id.starts_with("ctx-")) return std::nullopt;
  uint64_t seq = 0;
  auto r = std::from_chars(id.data() + 4, id.data() + id.size(), seq);
  if (r.ec != std::errc() || r.ptr != id.data() + id.size()) return std::nullopt;
  return seq;
}

ContextQuery newest_ended_page(std::string_view flow, std::string_view status, uint64_t before_seq, size_t limit) {
  ContextQuery q;
  q.flow = std::string(flow);
  q.status = std::string(status);
  q.ended_only = true;
  q.newest_first = true;
  q.up_to_seq = before_seq - 1;
  q.limit = limit;
  return q;
}

Value ended_trigger(const Value& trigger) {
  if (!trigger.is_object()) return trigger;
  std::vector<Member> kept;
  for (const auto& m : trigger.members()) {
    const std::string_view k = m.key.as_string();
    if (k != "record" && k != "previous" && k != "test") kept.push_back(Member{m.key, m.value});
  }
  return Value::object(std::move(kept));
}

Result<std::unique_ptr<Store>> open_store(const StoreOptions& options) {
  if (options.kind == "memory") return std::unique_ptr<Store>(std::make_unique<MemoryStore>());
  if (options.kind == "sqlite") {
    Result<std::unique_ptr<SqliteStore>> s = SqliteStore::open(options.path, options.sync, options.read_only, options.vfs, {}, options.report);
    if (!s) return s.error();
    return std::unique_ptr<Store>(std::move(s).value());
  }
  if (options.kind == "postgresql") {
    Result<std::unique_ptr<PostgresStore>> s = PostgresStore::open(options.url, options.sync, options.read_only, options.lead_epoch);
    if (!s) return s.error();
    return std::unique_ptr<Store>(std::move(s).value());
  }
  return Error{"unknown store '" + options.kind + "' (stores: memory, sqlite, postgresql)"};
}

bool is_postgres_url(std::string_view data) {
  return data.starts_with("postgresql://") || data.starts_with("postgres://");
}

std::string postgres_store_name(const std::string& url) {
  Result<std::string> where = PostgresStore::where_of(url);
  return where ? "postgresql database " + *where : data_for_display(url);
}

namespace {

// Where a PostgreSQL URL's passwords are, as [first, last) spans: its user part's
// (postgresql://USER:PASSWORD@HOST...) and each `password` parameter's value.
std::vector<std::pair<size_t, size_t>> password_spans(std::string_view url) {
  std::vector<std::pair<size_t, size_t>> spans;
  if (!is_postgres_url(url)) return spans;
  const size_t question = std::min(url.find('?'), url.size());
  const size_t start = url.find("://") + 3;
  const size_t end = std::min(url.find('/', start), question);  // the authority ends at the path
  const std::string_view authority = url.substr(start, end - start);
  const size_t at = authority.rfind('@');
  const size_t colon = authority.find(':');
  if (at != std::string_view::npos && colon < at) spans.emplace_back(start + colon + 1, start + at);
  for (size_t p = question; p < url.size();) {  // ?KEY=VALUE&KEY=VALUE...
    const size_t next = std::min(url.find('&', p + 1), url.size());
    const std::string_view param = url.substr(p + 1, next - p - 1);
    if (param.starts_with("password=")) spans.emplace_back(p + 1 + std::string_view("password=").size(), next);
    p = next;
  }
  return spans;
}

}  // namespace

std::string data_for_display(std::string_view data) {
  std::string out(data);
  const std::vector<std::pair<size_t, size_t>> spans = password_spans(data);
  for (auto it = spans.rbegin(); it != spans.rend(); ++it) out.replace(it->first, it->second - it->first, "***");
  return out;
}

std::string hide_url_passwords(std::string message, std::string_view url) {
  for (const auto& [first, last] : password_spans(url)) {
    const std::string_view password = url.substr(first, last - first);
    if (password.empty()) continue;
    // Only within the quoted parts: the rest is libpq's own words, which a short password
    // may happen to spell.
    for (size_t open = message.find('"'); open != std::string::npos;) {
      const size_t close = message.find('"', open + 1);
      if (close == std::string::npos) break;
      std::string quoted = message.substr(open + 1, close - open - 1);
      for (size_t at = quoted.find(password); at != std::string::npos; at = quoted.find(password, at + 3)) {
        quoted.replace(at, password.size(), "***");
      }
      message.replace(open + 1, close - open - 1, quoted);
      open = message.find('"', open + 1 + quoted.size() + 1);
    }
  }
  return message;
}

}  // namespace flowrt
