#include "store/store.h"

#include <charconv>

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

}  // namespace flowrt
