// Shell completion scripts generated from a command tree (command_tree.h): every command and
// subcommand at every depth, their flags and options, the choices CLI11 knows (-o/--output
// formats, CLI::IsMember) and file or directory completion for options that take paths.
// The scripts are static: TAB never runs the program, so names that only the controller knows
// (workloads, contexts, tokens) are not completed.
#pragma once

#include <string>

#include "cli/command_tree.h"

namespace rsl::cli {

//! A bash script that defines `_<program>` and registers it with `complete -F`. Works with
//! bash 4.2+ (with or without the bash-completion package). Install it as
//! /usr/share/bash-completion/completions/<program>.
std::string BashCompletion(const CommandNode& root, const std::string& program);

//! A native zsh script (`#compdef <program>`, _arguments and _describe per command). Install
//! it as /usr/share/zsh/vendor-completions/_<program> (any directory of $fpath); sourced after
//! compinit it registers itself with compdef.
std::string ZshCompletion(const CommandNode& root, const std::string& program);

}  // namespace rsl::cli
