// The hooks every run uses (data validation, environments and signatures, cost and
// policies), built from a state directory. Used by `seedctl run` and rsl-controller.
#pragma once

#include <string>

#include "engine/hooks.h"

namespace rsl::cli {

engine::Hooks DefaultHooks(const std::string& state_dir);

}  // namespace rsl::cli
