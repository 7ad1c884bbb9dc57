// The hooks every run uses (data validation, environments and signatures, cost and
// policies), built from a state directory. Runtime::Open installs them.
#pragma once

#include <string>

#include "engine/hooks.h"
#include "model/model_checks.h"

namespace rsl::runtime {

//! Admission: model environments (cheap) before the data contract (may read the whole
//! input). Step hooks: model, cost policies, cost. Publisher: the data layer's storage.
//! `images`: how registry images are reached (model_hooks.h). `price_file`: the cost hook's
//! price table ("" = <state_dir>/prices.yaml).
engine::Hooks DefaultHooks(const std::string& state_dir, const model::ImageAccess& images = {},
                           const std::string& price_file = "");

}  // namespace rsl::runtime
