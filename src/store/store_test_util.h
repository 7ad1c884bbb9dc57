// Rows the store's tests write: a submission's batch, a step row, a Started event.
#pragma once

#include <string>

#include "store/store.h"

namespace rsl::store::testing {

inline Batch NewRunBatch(const std::string& id, const std::string& name) {
  Batch b;
  WorkloadVersion v;
  v.id = id;
  v.name = name;
  v.namespace_ = "risk";
  v.spec_json = "{}";
  v.digest = "sha256:00";
  v.created_at = 1000;
  v.created_by = "alice";
  v.labels = {{"team", "risk"}};
  b.versions.push_back(v);
  Run r;
  r.id = RunIdFor(id);
  r.workload_id = id;
  r.name = name;
  r.namespace_ = "risk";
  r.created_at = 1000;
  b.runs.push_back(r);
  Step s;
  s.run_id = r.id;
  s.name = "train";
  b.steps.push_back(s);
  Event e;
  e.run_id = r.id;
  e.reason = "Admitted";
  e.message = "ok";
  b.events.push_back(e);
  return b;
}

inline Step StepRow(const std::string& run_id, const std::string& name, int index,
                    spec::StepPhase phase) {
  Step s;
  s.run_id = run_id;
  s.name = name;
  s.index = index;
  s.phase = phase;
  s.message = "row of " + name;
  return s;
}

inline Event StartedEvent(const std::string& run_id, const std::string& step,
                          const std::string& message) {
  Event e;
  e.run_id = run_id;
  e.step = step;
  e.reason = "Started";
  e.message = message;
  return e;
}

}  // namespace rsl::store::testing
