#include "cli/default_hooks.h"

namespace rsl::cli {

engine::Hooks DefaultHooks(const std::string& state_dir) {
  engine::Hooks hooks;
  (void)state_dir;
  return hooks;
}

}  // namespace rsl::cli
