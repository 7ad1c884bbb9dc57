// seedctl: the RSL command line.
#include <CLI/CLI.hpp>

#include "cli/cli.h"

int main(int argc, char** argv) {
  CLI::App app{"seedctl: declarative AI workloads (RSL)", "seedctl"};
  app.require_subcommand(1);
  app.fallthrough();
  rsl::cli::RegisterSpecCommands(app);
  rsl::cli::RegisterRunCommands(app);
  rsl::cli::RegisterDataCommands(app);
  rsl::cli::RegisterModelCommands(app);
  rsl::cli::RegisterImageCommands(app);
  rsl::cli::RegisterGovernCommands(app);
  rsl::cli::RegisterWorkloadCommands(app);
  rsl::cli::RegisterConfigCommands(app);
  rsl::cli::RegisterCompletionCommands(app);
  rsl::cli::AddConfigFileFlag(app);
  return rsl::cli::ParseCommandLine(app, argc, argv).value_or(0);
}
