// Engine hooks that feed the controller's metrics without the engine knowing about them:
// admission checks are wrapped to time them, and a StepHook times steps (queueing: ready ->
// launch; duration: launch -> exit) and the end of runs.
//
// rsl_reconcile_duration_seconds{kind="AIWorkload", phase, result} phases:
//   submit     parse + validate + durable record (ControllerService::Submit)
//   admission  one admission check (result success|failure)
//   step       one attempt, launch to exit (result = the exit kind: succeeded, failed, ...)
//   finalize   last step's exit to the run's terminal phase (commit/discard; result = phase)
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "api/metrics.h"
#include "engine/hooks.h"
#include "store/store.h"

namespace rsl::api {

//! Wraps every admission check of `hooks` and appends the metrics StepHook. `store` (for run
//! creation times) and `metrics` must outlive the hooks.
void InstrumentHooks(engine::Hooks* hooks, Metrics* metrics, store::Store* store);

}  // namespace rsl::api
