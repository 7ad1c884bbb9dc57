// seedctl config get-contexts|use-context|set-context|current-context|delete-context
// (docs/cli.md): the contexts file of api/client_contexts.h, kubeconfig's way. The file is
// $RSL_CONFIG (seedctl --config sets it), else $XDG_CONFIG_HOME/rsl/config.yaml, else
// ~/.config/rsl/config.yaml. Functions print to stdout and end a failing command by throwing
// Exit (the error's code on the last line of stderr).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace rsl::cli {

struct ConfigFlags {
  std::string name;  //!< the context (use-, set-, delete-context)
  // set-context: the fields to set; empty ones keep the context's value.
  std::string server;
  std::string token_file;
  std::string certificate_authority;
  std::string client_certificate;
  std::string client_key;
  std::string namespace_;
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
