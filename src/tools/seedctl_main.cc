// seedctl: the RSL command line.
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/cli.h"

int main(int argc, char** argv) {
  CLI::App app{"seedctl: declarative AI workloads (RSL)", "seedctl"};
  app.require_subcommand(1);
  app.fallthrough();
  rsl::cli::RegisterSpecCommands(app);
  rsl::cli::RegisterRunCommands(app);
  rsl::cli::RegisterDataCommands(app);
  rsl::cli::RegisterModelCommands(app);
  rsl::cli::RegisterGovernCommands(app);
  rsl::cli::RegisterWorkloadCommands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    if (rc != 0) std::cerr << "INVALID_ARGUMENT\n";
    return rc;
  } catch (const rsl::cli::Exit& e) {
    return e.exit_code;
  }
  return 0;
}
