#include "store/memory_store.h"

#include <iterator>
#include <type_traits>

namespace flowrt {

Result<StoredState> MemoryStore::load(bool with_contexts) {
  MutexLock lock(mu_);
  StoredState s;
  s.fresh = !written_;
  s.counters = counters_;
  for (const std::string& name : table_order_) {
    const Table& t = tables_.find(name)->second;
    StoredState::Table out{name, {}, {}};
    out.records.reserve(t.order.size());
    for (const auto& [position, sys_id] : t.order) {
      out.records.push_back(t.rows.find(sys_id)->second.second);
      out.positions.push_back(position);
    }
    s.tables.push_back(std::move(out));
  }
  for (const auto& [key, d] : definitions_) s.definitions.push_back(d);
  if (with_contexts) {
    for (const auto& [seq, c] : contexts_) {
      if (!is_final_context_status(c.status) || c.record.is_null()) s.contexts.push_back(c);
    }
  }
  for (const auto& [name, state] : locks_) s.locks.push_back(StoredLock{name, state});
  for (const auto& [key, ran] : run_once_) {
    if (ran) s.run_once.push_back(RunOncePut{std::get<0>(key), std::get<1>(key), std::get<2>(key), true});
  }
  s.recoveries = recoveries_;
  for (const auto& [key, k] : keyed_writes_) s.keyed_writes.push_back(k);
  return s;
}

Result<std::optional<StoredContext>> MemoryStore::load_context(uint64_t seq) {
  MutexLock lock(mu_);
  auto it = contexts_.find(seq);
  if (it == contexts_.end()) return std::optional<StoredContext>();
  return std::optional<StoredContext>(it->second);
}

Result<Value> MemoryStore::load_definition_version(std::string_view type, std::string_view id,
                                                   std::string_view fingerprint) {
  MutexLock lock(mu_);
  auto it = versions_.find(std::make_tuple(std::string(type), std::string(id), std::string(fingerprint)));
  return it == versions_.end() ? Value() : it->second;
}

Result<std::vector<StoredContext>> MemoryStore::list_contexts(const ContextQuery& q) {
  MutexLock lock(mu_);
  std::vector<StoredContext> out;
  auto take = [&](const StoredContext& c) {
    if (q.loaded_only && is_final_context_status(c.status) && !c.record.is_null()) return;
    if (!q.flow.empty() && c.flow != q.flow) return;
    if (!q.status.empty() && c.status != q.status) return;
    if (q.ended_only && !is_final_context_status(c.status)) return;
    out.push_back(c);
    if (!q.records_of_checkpointed && !c.checkpoint.is_null()) out.back().record = Value();
  };
  if (q.newest_first) {
    for (auto it = std::make_reverse_iterator(contexts_.upper_bound(q.up_to_seq));
         it != contexts_.rend() && it->first > q.after_seq && out.size() < q.limit; ++it) {
      take(it->second);
    }
    return out;
  }
  for (auto it = contexts_.upper_bound(q.after_seq); it != contexts_.end() && out.size() < q.limit; ++it) {
    if (it->first > q.up_to_seq) break;
    take(it->second);
  }
  return out;
}

void MemoryStore::prune(const HistoryPrune& p) {
  if (p.ended_before >= 0) {
    for (auto it = contexts_.begin(); it != contexts_.end();) {
      const bool old = is_final_context_status(it->second.status) && it->second.ended < p.ended_before;
      it = old ? contexts_.erase(it) : std::next(it);
    }
  }
  if (p.keep == 0) return;
  uint64_t kept = 0;
  for (auto it = contexts_.rbegin(); it != contexts_.rend();) {
    if (!is_final_context_status(it->second.status) || ++kept <= p.keep) {
      ++it;
      continue;
    }
    it = std::make_reverse_iterator(contexts_.erase(std::next(it).base()));
  }
}

Status MemoryStore::write(const StoreBatch& batch) {
  MutexLock lock(mu_);
  written_ = true;
  for (const StoreChange& c : batch.changes) apply(c);
  counters_ = batch.counters;
  return Status::ok();
}

Status MemoryStore::set_sync_mode(SyncMode mode) {
  MutexLock lock(mu_);
  sync_ = mode;
  return Status::ok();
}

void MemoryStore::apply(const StoreChange& change) {
  std::visit(
      [this](const auto& c) NO_THREAD_SAFETY_ANALYSIS {
        using T = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<T, RecordPut>) {
          auto [it, added] = tables_.try_emplace(c.table);
          if (added) table_order_.push_back(c.table);
          Table& t = it->second;
          const std::string sys_id(c.record.members()[0].value.as_string());
          auto row = t.rows.find(sys_id);
          if (row == t.rows.end()) {
            t.rows.emplace(sys_id, std::make_pair(c.position, c.record));
            t.order.emplace(c.position, sys_id);
          } else {
            row->second.second = c.record;
          }
        } else if constexpr (std::is_same_v<T, RecordRemove>) {
          auto it = tables_.find(c.table);
          if (it == tables_.end()) return;
          auto row = it->second.rows.find(c.sys_id);
          if (row == it->second.rows.end()) return;
          it->second.order.erase(row->second.first);
          it->second.rows.erase(row);
        } else if constexpr (std::is_same_v<T, DefinitionPut>) {
          if (!c.definition.published.is_null()) {
            versions_.try_emplace({c.definition.type, c.definition.id, c.definition.published_fingerprint},
                                  c.definition.published);
          }
          auto [it, added] = definitions_.try_emplace({c.definition.type, c.definition.id}, c.definition);
          if (!added) {
            const TimeMs last_tick = it->second.last_tick;  // a put does not change it (store.h)
            it->second = c.definition;
            it->second.last_tick = last_tick;
          }
        } else if constexpr (std::is_same_v<T, ScheduleTick>) {
          auto it = definitions_.find({"flow", c.flow});
          if (it != definitions_.end()) it->second.last_tick = c.at;
        } else if constexpr (std::is_same_v<T, ContextPut>) {
          StoredContext& stored = contexts_[c.context.seq] = c.context;
          if (is_final_context_status(stored.status) && !stored.record.is_null()) {
            stored.trigger = ended_trigger(stored.trigger);
          }
        } else if constexpr (std::is_same_v<T, ContextUpdate>) {
          auto it = contexts_.find(c.seq);
          if (it == contexts_.end()) return;
          StoredContext& s = it->second;
          s.status = c.status;
          if (c.started >= 0) s.started = c.started;
          if (c.ended >= 0) s.ended = c.ended;
          if (!c.record.is_null()) s.record = c.record;
          if (is_final_context_status(c.status) && !s.record.is_null()) s.trigger = ended_trigger(s.trigger);
          if (is_final_context_status(c.status)) {
            s.checkpoint = Value();
          } else if (!c.checkpoint.is_null()) {
            s.checkpoint = c.checkpoint;
          }
        } else if constexpr (std::is_same_v<T, LockPut>) {
          if (c.state.is_null()) {
            locks_.erase(c.name);
          } else {
            locks_[c.name] = c.state;
          }
        } else if constexpr (std::is_same_v<T, RunOncePut>) {
          if (c.flow.empty()) {
            for (auto it = run_once_.begin(); it != run_once_.end();) {
              if (std::get<0>(it->first) == c.table && std::get<1>(it->first) == c.sys_id) {
                it = run_once_.erase(it);
              } else {
                ++it;
              }
            }
          } else if (c.ran) {
            run_once_[{c.table, c.sys_id, c.flow}] = true;
          } else {
            run_once_.erase({c.table, c.sys_id, c.flow});
          }
        } else if constexpr (std::is_same_v<T, RecoveryNote>) {
          recoveries_.push_back(c);
        } else if constexpr (std::is_same_v<T, HistoryPrune>) {
          prune(c);
        } else if constexpr (std::is_same_v<T, KeyedWritePut>) {
          keyed_writes_[{c.caller, c.key}] = c;
        } else if constexpr (std::is_same_v<T, KeyedWritePrune>) {
          std::erase_if(keyed_writes_, [&](const auto& entry) { return entry.second.at < c.before; });
        }
      },
      change);
}

}  // namespace flowrt
