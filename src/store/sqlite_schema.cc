// The store's tables in <state-dir>/rsl.db, as the migrations of component "store", in the
// order they were added (each applied once, base/sqlite.h Db::Migrate).
#include "store/sqlite_schema.h"

namespace rsl::store {

const std::vector<std::string>& SqliteStoreMigrations() {
  static const std::vector<std::string> kMigrations = {
      R"sql(
CREATE TABLE store_versions (
  id TEXT PRIMARY KEY, name TEXT NOT NULL, namespace TEXT NOT NULL, spec_json TEXT NOT NULL,
  digest TEXT NOT NULL, created_at INTEGER NOT NULL, created_by TEXT NOT NULL,
  labels_json TEXT NOT NULL, version INTEGER NOT NULL, rollback_of TEXT NOT NULL);
CREATE INDEX store_versions_name ON store_versions(namespace, name, version);
CREATE TABLE store_runs (
  id TEXT PRIMARY KEY, workload_id TEXT NOT NULL UNIQUE, name TEXT NOT NULL,
  namespace TEXT NOT NULL, phase TEXT NOT NULL, failure_code TEXT NOT NULL,
  failure_message TEXT NOT NULL, created_at INTEGER NOT NULL, started_at INTEGER NOT NULL,
  finished_at INTEGER NOT NULL, run_dir TEXT NOT NULL, admission_report_json TEXT NOT NULL,
  commit_state TEXT NOT NULL, committed_uri TEXT NOT NULL);
CREATE INDEX store_runs_phase ON store_runs(phase);
CREATE TABLE store_steps (
  run_id TEXT NOT NULL, name TEXT NOT NULL, idx INTEGER NOT NULL, phase TEXT NOT NULL,
  attempts INTEGER NOT NULL, retries_used INTEGER NOT NULL, attempt_id TEXT NOT NULL,
  node TEXT NOT NULL, exit_code INTEGER NOT NULL, signal INTEGER NOT NULL,
  wall_ms INTEGER NOT NULL, cpu_ms INTEGER NOT NULL, peak_memory_bytes INTEGER NOT NULL,
  started_at INTEGER NOT NULL, finished_at INTEGER NOT NULL, next_attempt_at INTEGER NOT NULL,
  failure_code TEXT NOT NULL, message TEXT NOT NULL, metrics_json TEXT NOT NULL,
  progress TEXT NOT NULL, output_dir TEXT NOT NULL, PRIMARY KEY (run_id, name));
CREATE TABLE store_attempts (
  id TEXT PRIMARY KEY, run_id TEXT NOT NULL, step TEXT NOT NULL, number INTEGER NOT NULL,
  launch_json TEXT NOT NULL, state TEXT NOT NULL, exit_kind TEXT NOT NULL,
  created_at INTEGER NOT NULL, finished_at INTEGER NOT NULL);
CREATE INDEX store_attempts_run ON store_attempts(run_id);
CREATE TABLE store_events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, step TEXT NOT NULL,
  type TEXT NOT NULL, reason TEXT NOT NULL, message TEXT NOT NULL, time INTEGER NOT NULL);
CREATE INDEX store_events_run ON store_events(run_id, seq);
CREATE TABLE store_artifacts (
  run_id TEXT NOT NULL, step TEXT NOT NULL, uri TEXT NOT NULL, bytes INTEGER NOT NULL,
  kind TEXT NOT NULL, digest TEXT NOT NULL, PRIMARY KEY (run_id, step, uri));
CREATE TABLE store_lineage (
  run_id TEXT NOT NULL, from_ref TEXT NOT NULL, to_ref TEXT NOT NULL, relation TEXT NOT NULL,
  from_json TEXT NOT NULL, PRIMARY KEY (run_id, from_ref, to_ref, relation));
CREATE TABLE store_configmaps (
  namespace TEXT NOT NULL, name TEXT NOT NULL, secret INTEGER NOT NULL,
  data_json TEXT NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (namespace, name, secret));
)sql",
      // 2: the tables every transition writes get cheaper. Steps: one B-tree keyed by
      // (run_id, name) instead of a rowid table plus its key index. Attempts: no separate
      // run_id index (ListAttempts reads the id range "<run_id>/..."; ids begin with it).
      // Events: seq without AUTOINCREMENT (no sqlite_sequence update per event); events are
      // never deleted, so the next seq is still one above every seq ever used.
      R"sql(
CREATE TABLE store_steps_v2 (
  run_id TEXT NOT NULL, name TEXT NOT NULL, idx INTEGER NOT NULL, phase TEXT NOT NULL,
  attempts INTEGER NOT NULL, retries_used INTEGER NOT NULL, attempt_id TEXT NOT NULL,
  node TEXT NOT NULL, exit_code INTEGER NOT NULL, signal INTEGER NOT NULL,
  wall_ms INTEGER NOT NULL, cpu_ms INTEGER NOT NULL, peak_memory_bytes INTEGER NOT NULL,
  started_at INTEGER NOT NULL, finished_at INTEGER NOT NULL, next_attempt_at INTEGER NOT NULL,
  failure_code TEXT NOT NULL, message TEXT NOT NULL, metrics_json TEXT NOT NULL,
  progress TEXT NOT NULL, output_dir TEXT NOT NULL, PRIMARY KEY (run_id, name)) WITHOUT ROWID;
INSERT INTO store_steps_v2 SELECT * FROM store_steps;
DROP TABLE store_steps;
ALTER TABLE store_steps_v2 RENAME TO store_steps;
DROP INDEX store_attempts_run;
CREATE TABLE store_events_v2 (
  seq INTEGER PRIMARY KEY, run_id TEXT NOT NULL, step TEXT NOT NULL,
  type TEXT NOT NULL, reason TEXT NOT NULL, message TEXT NOT NULL, time INTEGER NOT NULL);
INSERT INTO store_events_v2 SELECT * FROM store_events;
DROP TABLE store_events;
ALTER TABLE store_events_v2 RENAME TO store_events;
CREATE INDEX store_events_run ON store_events(run_id, seq);
)sql",
      // 3: retention. A run whose history was collected keeps its row, marked.
      R"sql(
ALTER TABLE store_runs ADD COLUMN collected_at INTEGER NOT NULL DEFAULT 0;
)sql",
      // 4: a step's CPU peak (the highest rate between two usage samples, millicores).
      R"sql(
ALTER TABLE store_steps ADD COLUMN peak_cpu_millicores INTEGER NOT NULL DEFAULT 0;
)sql",
      // 5: the workloads list pages by keyset, newest first (ListRunsPage): an index per way
      // it is read (all namespaces, one namespace, one name's history).
      R"sql(
CREATE INDEX store_runs_created ON store_runs(created_at, workload_id);
CREATE INDEX store_runs_ns_created ON store_runs(namespace, created_at, workload_id);
CREATE INDEX store_runs_ns_name_created ON store_runs(namespace, name, created_at, workload_id);
)sql",
      // 6: a turn's writes land on fewer pages. Every commit writes each page it changed to
      // the WAL (4 KiB, then again into the database at the checkpoint), so what counts is
      // how many pages a turn's rows are spread over. Steps are kept in pipeline order,
      // (run_id, idx, name), roughly the order a run reaches them (in name order, the steps
      // of one turn can sit on every page), with (run_id, name) a unique index for the
      // upsert (an update changes neither). Attempts get a rowid (launch order) and their id
      // a unique index; their launch record (about 1 KB, written once) moves to a table of
      // its own, so an attempt's exit rewrites a row of about 100 bytes, not 1.2 KB.
      // 10,000-step tree (rsl-engine-bench): 170 MB of WAL and database writes before.
      R"sql(
CREATE TABLE store_steps_v6 (
  run_id TEXT NOT NULL, name TEXT NOT NULL, idx INTEGER NOT NULL, phase TEXT NOT NULL,
  attempts INTEGER NOT NULL, retries_used INTEGER NOT NULL, attempt_id TEXT NOT NULL,
  node TEXT NOT NULL, exit_code INTEGER NOT NULL, signal INTEGER NOT NULL,
  wall_ms INTEGER NOT NULL, cpu_ms INTEGER NOT NULL, peak_memory_bytes INTEGER NOT NULL,
  started_at INTEGER NOT NULL, finished_at INTEGER NOT NULL, next_attempt_at INTEGER NOT NULL,
  failure_code TEXT NOT NULL, message TEXT NOT NULL, metrics_json TEXT NOT NULL,
  progress TEXT NOT NULL, output_dir TEXT NOT NULL,
  peak_cpu_millicores INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (run_id, idx, name)) WITHOUT ROWID;
INSERT INTO store_steps_v6 SELECT * FROM store_steps;
DROP TABLE store_steps;
ALTER TABLE store_steps_v6 RENAME TO store_steps;
CREATE UNIQUE INDEX store_steps_name ON store_steps(run_id, name);
CREATE TABLE store_attempts_v6 (
  id TEXT NOT NULL, run_id TEXT NOT NULL, step TEXT NOT NULL, number INTEGER NOT NULL,
  state TEXT NOT NULL, exit_kind TEXT NOT NULL, created_at INTEGER NOT NULL,
  finished_at INTEGER NOT NULL);
INSERT INTO store_attempts_v6 SELECT id, run_id, step, number, state, exit_kind, created_at,
  finished_at FROM store_attempts ORDER BY created_at, id;
CREATE TABLE store_launches (attempt_id TEXT NOT NULL, launch_json TEXT NOT NULL);
INSERT INTO store_launches SELECT id, launch_json FROM store_attempts WHERE launch_json != ''
  ORDER BY created_at, id;
DROP TABLE store_attempts;
ALTER TABLE store_attempts_v6 RENAME TO store_attempts;
CREATE UNIQUE INDEX store_attempts_id ON store_attempts(id);
CREATE UNIQUE INDEX store_launches_id ON store_launches(attempt_id);
)sql",
      // 7: the transition log (store/log_store.cc): the LSN of the last log record whose rows
      // are in these tables, written in the same transaction as those rows.
      R"sql(
CREATE TABLE store_log (id INTEGER PRIMARY KEY CHECK (id = 1), applied_lsn INTEGER NOT NULL);
INSERT INTO store_log VALUES (1, 0);
)sql",
      // 8: a step's row is upserted on its primary key, (run_id, idx, name): every writer
      // gives a step its pipeline index, so the unique (run_id, name) index only doubled the
      // work of each step transition (a second B-tree seek for the conflict, a second tree
      // to insert into) and no read uses it.
      R"sql(
DROP INDEX store_steps_name;
)sql",
  };
  return kMigrations;
}

}  // namespace rsl::store
