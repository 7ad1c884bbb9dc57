// YAML as users write it, after yaml-cpp has built the node tree: duplicate keys are errors
// (yaml-cpp keeps both pairs and lookups see only the first), and merge keys (`<<: *base`,
// `<<: [*a, *b]`) are applied, which yaml-cpp leaves to the application. The rules are the
// YAML 1.1 merge type's, as Kubernetes' decoding accepts them: a key written in the mapping
// wins over a merged one, and among merged mappings an earlier one wins over a later one.
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

#include "base/status.h"

namespace rsl::spec {

//! Most key/value pairs merge keys may copy into mappings, over the whole document: a small
//! file can merge one large mapping into many others, and each copy costs memory and time.
//! 10,000 steps each merging 50 shared fields stay below it.
constexpr size_t kMaxMergedPairs = 500'000;

//! Checks every mapping reachable from `root` for duplicate keys and applies merge keys in
//! place (`<<` pairs are removed; merged pairs are appended). A node shared through aliases is
//! visited once, so the work is linear in the text, not in the alias expansion. Errors are
//! SPEC_PARSE_ERROR at the offending key's line:column in `file`, with the field path; when
//! there are errors, `root` may be partly merged and should not be used.
Errors ResolveYaml(YAML::Node root, const std::string& file);

}  // namespace rsl::spec
