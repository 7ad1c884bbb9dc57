// The canonical form of a workload: normalised JSON (defaults filled, shorthands expanded,
// keys sorted, no positions) and its sha256 digest, the basis of immutable versions.
#pragma once

#include <string>

#include "spec/workload.h"

namespace rsl::spec {

//! Deterministic JSON text; equal for specs that mean the same thing however they were written.
std::string CanonicalJson(const Workload& workload);
//! "sha256:<64 hex>" of CanonicalJson.
std::string SpecDigest(const Workload& workload);
//! Parses canonical JSON back into a Workload (used by the store to rebuild a version).
Result<Workload> FromCanonicalJson(const std::string& json);

}  // namespace rsl::spec
