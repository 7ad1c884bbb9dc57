// seedctl config get-contexts|use-context|set-context|current-context|delete-context
// (docs/cli.md): the contexts file of api/client_contexts.h, kubeconfig's way. The file is
// $RSL_CONFIG (seedctl --config sets it), else $XDG_CONFIG_HOME/rsl/config.yaml, else
// ~/.config/rsl/config.yaml. Functions print to stdout and end a failing command by throwing
// Exit (the error's code on the last line of stderr).
#pragma once

#include <CLI/CLI.hpp>

#include <set>
#include <string>

#include "api/client_contexts.h"

namespace rsl::cli {

//! A command's context name and (set-context) the fields to set: the same fields as a context
//! of the file. A field not given keeps the context's value; one given empty
//! (`--namespace ""`, as kubectl's set-context) is cleared: its flag name is in `cleared`.
struct ConfigFlags : api::Context {
  std::set<std::string> cleared;
};

//! A table CURRENT NAME SERVER NAMESPACE, `*` in the current context's row.
void RunGetContexts(const ConfigFlags& flags);
//! Makes `name` the current context. NOT_FOUND (naming the known ones) when there is none.
void RunUseContext(const ConfigFlags& flags);
//! Creates context `name` or sets the given fields of it; file paths are stored absolute (as
//! given from the working directory). The file is written atomically, mode 0600.
void RunSetContext(const ConfigFlags& flags);
//! Prints the current context's name. NOT_FOUND when none is current.
void RunCurrentContext(const ConfigFlags& flags);
//! Removes context `name` (and currentContext when it named it). NOT_FOUND when none is.
void RunDeleteContext(const ConfigFlags& flags);

void RegisterConfigCommands(CLI::App& app);

}  // namespace rsl::cli
