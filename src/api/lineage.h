// Lineage of one run: input DataDescriptor -> steps -> outputs with byte sizes, rendered as
// the seed's text (`Input: <uri> (<size>)` / `→ a → b → Output: <uri> (<size>)`) and as an
// OpenLineage RunEvent (https://openlineage.io/spec/2-0-2/OpenLineage.json).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "spec/workload.h"
#include "store/store.h"

namespace rsl::api {

struct LineageInput {
  const store::WorkloadVersion* version = nullptr;
  const store::Run* run = nullptr;
  const std::vector<store::Step>* steps = nullptr;
  const std::vector<store::Artifact>* artifacts = nullptr;
  const std::vector<store::LineageEdge>* edges = nullptr;
  const spec::Workload* workload = nullptr;  //!< may be null
};

//! {"input": {uri, bytes, descriptor}, "steps": [...], "outputs": [{uri, bytes, step}],
//!  "text": "..."}; bytes -1 when unknown.
nlohmann::json LineageJson(const LineageInput& in);

//! The OpenLineage RunEvent for the run's current state (START/RUNNING/COMPLETE/FAIL/ABORT).
nlohmann::json OpenLineageEvent(const LineageInput& in, const nlohmann::json& lineage);

//! "12.4GB", "245MB", "512B" (decimal units, as the seed prints); "?" for negative.
std::string HumanBytes(int64_t bytes);

//! A deterministic RFC 4122 version-4-shaped UUID derived from `seed` (sha256).
std::string UuidFrom(const std::string& seed);

//! Total size of a file:// URI or local path (a directory: every regular file below it);
//! -1 when it cannot be read.
int64_t LocalSize(const std::string& uri_or_path);

}  // namespace rsl::api
