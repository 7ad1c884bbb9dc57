// A Batch's run, step, attempt, event, artifact and lineage rows in a compact binary form: the
// payload of a transition log record (store/transition_log.h). Versions and `also` writes are
// not encoded (they are applied to SQLite directly, store/log_store.cc).
//
// The form: a format byte, then per table a varint row count and the rows, each field a
// varint (integers zigzag-encoded) or a varint length and its bytes, in the order of the
// structs in store.h. Decoding checks every length against what is left and every phase name
// (spec::Parse), so a damaged record is an error, never a crash or an out-of-bounds read
// (fuzz/store_batch_fuzzer.cc).
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "store/store.h"

namespace rsl::store {

//! Appends the encoding of `b`'s rows (all but versions and also) to `out`.
void EncodeBatchRows(const Batch& b, std::string* out);

//! Appends the rows of `in` to `out`'s tables (events keep their encoded seq). Errors:
//! IO_ERROR naming what was damaged; `out` may then hold part of the rows.
Status DecodeBatchRows(std::string_view in, Batch* out);

}  // namespace rsl::store
