// Rows of rsl.db as the store's records: the column lists the queries select, and a reader
// per table (sqlite_store.cc). A phase stored under a name this build does not know is an
// error naming the row, never a guess.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "base/sqlite.h"
#include "base/status.h"
#include "store/store.h"

namespace rsl::store {

inline constexpr char kRunCols[] =
    "id, workload_id, name, namespace, phase, failure_code, failure_message, created_at, "
    "started_at, finished_at, run_dir, admission_report_json, commit_state, committed_uri, "
    "collected_at";
inline constexpr char kStepCols[] =
    "run_id, name, idx, phase, attempts, retries_used, attempt_id, node, exit_code, signal, "
    "wall_ms, cpu_ms, peak_memory_bytes, started_at, finished_at, next_attempt_at, "
    "failure_code, message, metrics_json, progress, output_dir, peak_cpu_millicores";
inline constexpr char kVersionCols[] =
    "id, name, namespace, spec_json, digest, created_at, created_by, labels_json, version, "
    "rollback_of";

std::string MapToJson(const std::map<std::string, std::string>& m);
//! A JSON object's string members; anything else (not JSON, not an object) gives none.
std::map<std::string, std::string> MapFromJson(const std::string& text);

//! Phases cross into the row as their names (spec::Name); an unknown name is an error.
Result<Run> ReadRun(const Stmt& s);
Result<Step> ReadStep(const Stmt& s);
WorkloadVersion ReadVersion(const Stmt& s);
Result<Attempt> ReadAttempt(const Stmt& s);
Event ReadEvent(const Stmt& s);
Artifact ReadArtifact(const Stmt& s);
LineageEdge ReadLineageEdge(const Stmt& s);
std::string ReadText0(const Stmt& s);

// The row a lookup by id found, or the error `missing()` makes when there was none.
template <class T, class Missing>
Result<T> FoundOr(Result<std::optional<T>> row, Missing missing) {
  if (!row.ok()) return row.error();
  if (!row->has_value()) return missing();
  return std::move(**row);
}

}  // namespace rsl::store
