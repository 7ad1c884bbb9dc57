// Checks that need the whole workload: the step graph (unique names, dependsOn, cycles),
// `when` expressions (syntax, and references to ancestors only), effective resources and
// autoscaling, the data contract's uniqueKey and output schema. Internal to spec/; called by
// ParseWorkload after the field-level pass.
#pragma once

#include <string>

#include "spec/parse.h"

namespace rsl::spec {

//! Adds errors and warnings to `result` and fills derived fields (Step::effective,
//! Step::serving, Quality::unique_key, DataOutput::schema). `text` is the YAML source, for
//! positions inside `when` strings.
void Validate(const std::string& text, ParseResult* result);

//! The default uniqueness key of SPEC.md: the first field named `id` or ending in `_id`;
//! "" if there is none.
std::string DefaultUniqueKey(const schema::Schema& schema);

}  // namespace rsl::spec
