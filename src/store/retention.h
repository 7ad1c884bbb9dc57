// Retention: which finished runs lose their history, and collecting it.
//
// A policy keeps the last N finished versions of each workload name, or finished runs for a
// duration, or both (a run goes when either says so), as Kubernetes' ttlSecondsAfterFinished
// and Argo's TTL strategy do. Collecting a run removes its run directory (working
// directories, logs, staging) and its steps, attempts and events; its version (the spec, so
// it can be rolled back to), its run row (phase, failure, times, committed URI), its
// artifacts and lineage stay, and committed outputs are never touched. Two runs of each name
// always stay whole: the newest finished one and the newest SUCCEEDED one (`previous.output`
// and rollbacks read them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/status.h"
#include "store/store.h"

namespace rsl::store {

struct RetentionPolicy {
  int keep_versions = 0;    //!< keep the newest N finished runs per name; 0 = no count limit
  int64_t keep_for_ms = 0;  //!< keep finished runs this long after they finished; 0 = forever
  bool enabled() const { return keep_versions > 0 || keep_for_ms > 0; }
};

//! The ids of the runs the policy collects now, oldest first. Pure. `runs`: any order, any
//! mix of names and namespaces; unfinished, committing and already collected runs are never
//! chosen.
std::vector<std::string> RunsToCollect(const std::vector<Run>& runs, const RetentionPolicy& policy,
                                       int64_t now_ms);

struct Collected {
  std::vector<std::string> run_ids;  //!< collected, oldest first
  int64_t bytes_freed = 0;           //!< size of the run directories removed
};

//! Applies the policy to every run of `store`: each chosen run's directory is removed, then
//! its rows (in that order: a kill between the two leaves a run that the next pass collects
//! again, never an orphan directory). `dry_run`: chooses and measures, changes nothing.
//! A run directory is removed only when it lies below `runs_dir` (a corrupt row never makes
//! retention delete elsewhere).
Result<Collected> Collect(Store* store, Env* env, const std::string& runs_dir,
                          const RetentionPolicy& policy, bool dry_run = false);

}  // namespace rsl::store
