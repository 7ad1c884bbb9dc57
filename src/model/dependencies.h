// model.dependencies against what an environment really has (SPEC.md "model"; the message
// format is the contract: `torch: declared 2.1.2+cu118, environment has 1.13.1`,
// `xformers: not installed`).
#pragma once

#include <string>
#include <vector>

#include "model/env_inspect.h"
#include "spec/workload.h"

namespace rsl::model {

//! Every declared dependency the environment does not satisfy, in declaration order.
//! A pin names a Python distribution (PEP 503 name, PEP 440 `==`, see pep.h); when the
//! environment has no Python distribution of that name, a dpkg package of exactly that name
//! (root environments) is compared by its Debian version string.
std::vector<std::string> DependencyDifferences(const std::vector<spec::Dependency>& declared,
                                               const Inspection& environment);

//! How many of `declared` the environment has at all (any version): used to tell the
//! environments that hold the model's software from the ones that do not (hooks.h).
size_t CountPresent(const std::vector<spec::Dependency>& declared, const Inspection& environment);

}  // namespace rsl::model
