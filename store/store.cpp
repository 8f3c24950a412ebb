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

std::string data_for_display(std::string_view data) {
  if (!is_postgres_url(data)) return std::string(data);
  const size_t question = std::min(data.find('?'), data.size());
  std::string out(data.substr(0, question));
  // postgresql://[USER[:PASSWORD]@]HOST...: the authority ends at the path.
  const size_t start = out.find("://") + 3;
  const size_t end = std::min(out.find('/', start), out.size());
  const size_t at = out.rfind('@', end == start ? start : end - 1);
  if (at != std::string::npos && at >= start) {
    const size_t colon = out.find(':', start);
    if (colon < at) out.replace(colon + 1, at - colon - 1, "***");
  }
  // ?KEY=VALUE&...: a password parameter's value.
  std::string_view query = data.substr(question);
  while (!query.empty()) {
    const size_t amp = std::min(query.find('&', 1), query.size());
    const std::string_view param = query.substr(0, amp);  // "?KEY=VALUE" or "&KEY=VALUE"
    out += param.substr(1).starts_with("password=") ? std::string(param.substr(0, 1)) + "password=***" : std::string(param);
    query.remove_prefix(amp);
  }
  return out;
}

}  // namespace flowrt
