#include "cli/cli.h"

namespace rsl::cli {

// Placeholder until this command group's issue lands.
void RegisterGovernCommands(CLI::App& app) { (void)app; }

}  // namespace rsl::cli
