// RecordLayout: where each field of a record being written comes from (a value the write
// gives, a field of the record before an update, or one of the engine's own fields), worked
// out from keys alone.
//
// The fields of a written record depend only on the keys of what the write gives, the keys
// of the record it updates and whether the write has a caller, never on the values. So each
// thread keeps the layouts of the last few combinations of keys it met, and works one out
// only for a new combination. Records of one table and the values of one step share their
// key arrays (shapes, see ObjectBuilder), which match at once; an object built as key/value
// pairs is matched key by key. Either way a write is built from a layout: the cache spares
// working the same one out again and changes nothing else.
//
// Thread-safety: the layouts are per thread. A reference returned is valid until the same
// thread asks for another layout.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "plans/value.h"

namespace flowrt::record_layout {

// The engine's fields, which a write cannot set: the id and the stamps of who and when.
bool engine_field(std::string_view name);

// The shape for a record with `keys`. Records of one table nearly always have the same
// fields in the same order, so they share a shape (see ObjectBuilder): a record costs 16
// bytes per field, not 32. Each thread keeps its own few most recent shapes.
Value record_shape(std::span<const Value> keys);

// Where one field of the record comes from.
struct FieldSource {
  enum class From : uint8_t {
    kSysId,              // the insert's id, given or generated (always the first field)
    kGiven,              // the write's value at `given`
    kPrevious,           // the updated record's value at `previous`
    kReplaced,           // the write's value at `given`, in the place of `previous`'s
    kNow,                // the time of the write (sys_created_on of an insert, sys_updated_on)
    kCreatedOnBefore,    // the updated record's sys_created_on (at `previous`; none: null)
    kModCountZero,       // an insert's sys_mod_count
    kModCountNext,       // one more than the updated record's (at `previous`; none: 0)
    kCreatedByBefore,    // the updated record's sys_created_by (at `previous`)
    kCaller,             // the write's caller (sys_created_by of an insert, sys_updated_by)
  };
  static constexpr uint32_t kNone = UINT32_MAX;
  From from;
  uint32_t given = kNone;     // a member index into what the write gives
  uint32_t previous = kNone;  // a member index into the record before
};

struct RecordLayout {
  Value shape;  // the record's keys, in order (one FieldSource each)
  std::vector<FieldSource> fields;
  // The index of "sys_id" among the members the write gives; kNone when it gives none.
  uint32_t given_sys_id = FieldSource::kNone;
};

// The layout of an insert of `values` (null or an object): the id first, then the values
// given in their order (the engine's fields skipped), then the engine's stamps;
// sys_created_by and sys_updated_by only when `with_caller`.
const RecordLayout& insert_layout(const Value& values, bool with_caller);

// The layout of an update of `previous` by `patch` (null or an object): the fields of
// `previous` in place, those `patch` names replaced (never the engine's fields), then the
// fields new in `patch`, then the engine's stamps; sys_created_by when `previous` has it,
// sys_updated_by only when `with_caller`.
const RecordLayout& update_layout(const Value& previous, const Value& patch, bool with_caller);

}  // namespace flowrt::record_layout
