// seedctl's command groups. Each group lives in its own file (<group>_cmd.cc) and registers
// its subcommands on the root app; seedctl_main.cc calls every Register function.
//
// Conventions every command follows (docs/cli.md):
//  - output: aligned tables by default, `-o json|yaml|wide` where it makes sense;
//  - exit codes: 0 ok, 1 error with the error's code alone on the last line (stderr);
//  - errors print as `file:line:col: CODE path: message (hint)` (Error::ToString).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "base/status.h"

namespace rsl::cli {

//! Thrown by a command to end seedctl with `exit_code` after it printed what it had to.
struct Exit {
  int exit_code;
};

//! Prints every error (one per line) and then the first error's code alone on the last line,
//! all to stderr, and throws Exit{1}.
[[noreturn]] void FailWith(const Errors& errors);
[[noreturn]] void FailWith(const Error& error);

void RegisterSpecCommands(CLI::App& app);      // validate, version        (spec/)
void RegisterRunCommands(CLI::App& app);       // run                      (engine/)
void RegisterDataCommands(CLI::App& app);      // data, datasource         (data/)
void RegisterModelCommands(CLI::App& app);     // env, signature, model    (model/)
void RegisterGovernCommands(CLI::App& app);    // advise, cost, policy, k8s (govern/)
void RegisterWorkloadCommands(CLI::App& app);  // workload, rollback, cluster, node, token,
                                               // secret, configmap, audit  (api/)

}  // namespace rsl::cli
