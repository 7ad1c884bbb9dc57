// seedctl's command groups. Each group lives in its own file (<group>_cmd.cc, its flags
// structs and command functions declared in <group>_cmd.h) and registers its subcommands on
// the root app; seedctl_main.cc calls every Register function.
//
// Shape of a command: a `struct XxxFlags` that CLI11 fills, a function `RunXxx(const
// XxxFlags&)` that does the work (callable without CLI11, e.g. from tests), and a Register
// function that only declares the flags and binds the command to its function (Bind).
//
// Conventions every command follows (docs/cli.md):
//  - output: aligned tables by default, `-o json|yaml|wide` where it makes sense;
//  - exit codes: 0 ok, 1 error with the error's code alone on the last line (stderr);
//  - errors print as `file:line:col: CODE path: message (hint)` (Error::ToString).
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

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
//! `r`'s value; FailWith its error when it has none.
template <typename T>
T OrFail(Result<T> r) {
  if (!r.ok()) FailWith(r.error());
  return std::move(r).value();
}
//! FailWith `s`'s error unless it is ok.
inline void OrFail(const Status& s) {
  if (!s.ok()) FailWith(s.error());
}

//! Parses the command line, running the chosen command's callback (seedctl's commands).
//! Returns std::nullopt when the program should go on, else the exit code to end it with:
//! after --help (0), a command that threw Exit, or a usage error (exit 1: CLI11's message,
//! then INVALID_ARGUMENT alone on the last line of stderr).
std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv);

//! The local state directory when --state-dir is not given: $RSL_STATE_DIR, else
//! $HOME/.local/state/rsl (/tmp/.local/state/rsl without a HOME).
std::string DefaultStateDir();
//! --state-dir, for the commands that read or write the local state directory.
void AddStateDir(CLI::App* cmd, std::string* state_dir);
//! -o/--output, one of `formats`. The flags struct holds the default: the format equal to
//! `*output` when this is called is marked "(default)" in the help.
void AddOutput(CLI::App* cmd, std::string* output, const std::vector<std::string>& formats);
//! The help text: "output format: table (default)|json" (no mark when `default_format` is
//! not one of `formats`, e.g. "" for a command whose default is plain text).
std::string OutputHelp(const std::vector<std::string>& formats, const std::string& default_format);

//! Binds `cmd` to `run(*flags)`. `flags` is what the command's options write into; it lives
//! as long as the app.
template <typename Flags>
void Bind(CLI::App* cmd, std::shared_ptr<Flags> flags, void (*run)(const Flags&)) {
  cmd->callback([flags = std::move(flags), run] { run(*flags); });
}

void RegisterSpecCommands(CLI::App& app);      // validate, version        (spec/)
void RegisterRunCommands(CLI::App& app);       // run                      (engine/)
void RegisterDataCommands(CLI::App& app);      // data, datasource         (data/)
void RegisterModelCommands(CLI::App& app);     // env, signature, model    (model/)
void RegisterImageCommands(CLI::App& app);     // image                    (image/)
void RegisterGovernCommands(CLI::App& app);    // advise, cost, policy, k8s (govern/)
void RegisterWorkloadCommands(CLI::App& app);  // workload, rollback, cluster, node, token,
                                               // secret, configmap, audit  (api/)
void RegisterConfigCommands(CLI::App& app);    // config: contexts          (api/)
//! completion bash|zsh and man DIR, generated from the whole tree (completion_cmd.h).
void RegisterCompletionCommands(CLI::App& app);
//! seedctl --config FILE: the contexts file for this command (as $RSL_CONFIG).
void AddConfigFileFlag(CLI::App& app);

}  // namespace rsl::cli
