// JSON encodings of the store's records as Kubernetes-style objects
// (apiVersion/kind/metadata/spec/status). docs/api.md shows each one.
// Times are milliseconds since the epoch (`...Ms`) plus RFC 3339 UTC strings; seedctl shows
// them in local time.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "govern/cost.h"
#include "spec/workload.h"
#include "store/store.h"

namespace rsl::api {

//! "2026-11-29T08:01:02.345Z"; "" for 0.
std::string Rfc3339(int64_t ms);

//! "done/total" -> {done, total, percent}; null when it does not parse.
nlohmann::json ProgressJson(const std::string& progress);

//! A step's phase as the API and seedctl show it: the stored phase's name, except that a step
//! of a REJECTED run never started is REJECTED (the store keeps it CANCELLED, which would
//! read as "someone cancelled it").
std::string StepPhaseName(const store::Run& run, const store::Step& step);

//! Sets `status.stepCount`, `status.stepsSucceeded`, `status.stepsSkipped` (a skipped step is
//! not counted as succeeded: `when` was false, it did not run) and `status.stepCounts` (every
//! step by phase, named as StepPhaseName names them) from `counts` (store::Store::CountSteps)
//! or from `steps`.
void AddStepCounts(const store::Run& run, const std::map<std::string, int64_t>& counts,
                   nlohmann::json* status);
void AddStepCounts(const store::Run& run, const std::vector<store::Step>& steps,
                   nlohmann::json* status);

//! `status.steps[]` of `steps`, in their order. `workload` (may be null) adds resource limits.
nlohmann::json StepsJson(const store::Run& run, const std::vector<store::Step>& steps,
                         const spec::Workload* workload);
//! `status.currentStep` of a step as StepsJson encodes it.
nlohmann::json CurrentStepJson(const nlohmann::json& step);
//! The step a user cares about now: the first whose attempt is live (store::StepAttemptLive)
//! or that is RETRYING, else the last that started; null when none has started.
const store::Step* CurrentStep(const std::vector<store::Step>& steps);

//! The Workload object: metadata from the version, status from the run and its steps.
//! `workload` (the parsed snapshot, may be null) adds per-step resource limits.
//! `status.steps[].index` and `status.currentStep.index` are 0-based pipeline positions.
nlohmann::json WorkloadObject(const store::WorkloadVersion& version, const store::Run& run,
                              const std::vector<store::Step>& steps,
                              const spec::Workload* workload);

//! One line of a WorkloadList (no per-step detail).
nlohmann::json WorkloadSummary(const store::WorkloadVersion& version, const store::Run& run);

nlohmann::json EventJson(const store::Event& event);

//! `status.serving` of a running serving step `step`.
//! A run's cost from its attempts' cost records (docs/api.md, status.cost): the total, its
//! GPU/CPU/memory parts and each step's total (every attempt of it), in the records' currency.
//! null when there is no record (no attempt has ended, or cost accounting is off).
nlohmann::json RunCostJson(const std::vector<govern::CostRecord>& records);

nlohmann::json ServingJson(const std::string& step, const backend::ServingStatus& status);

//! Replaces every occurrence of every secret value with ***, except values too short to mask
//! (spec::MaskedInLogs).
std::string MaskSecrets(std::string text, const std::vector<std::string>& secret_values);

//! The warnings of a secret's creation: one per value too short to be masked in logs.
std::vector<std::string> UnmaskedSecretWarnings(const std::map<std::string, std::string>& data);

}  // namespace rsl::api
