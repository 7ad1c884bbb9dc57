// seedctl completion bash|zsh and seedctl man DIR: shell completion scripts and man pages
// generated from seedctl's own command tree (completion.h, man_page.h), so every command
// registered by any <group>_cmd.cc has them without further work (docs/cli.md).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "cli/man_page.h"

namespace rsl::cli {

struct CompletionFlags {
  std::string shell;               //!< bash | zsh
  const CLI::App* root = nullptr;  //!< the command tree to complete
};
//! Prints the completion script for `root`'s command tree to stdout.
void RunCompletion(const CompletionFlags& flags);

struct ManFlags {
  std::string dir;                 //!< where the pages go (created if missing)
  std::string date;                //!< the pages' date; "" = $SOURCE_DATE_EPOCH's, else today
  const CLI::App* root = nullptr;  //!< seedctl's command tree
};
//! Writes seedctl.1, seedctl-<command>[-<sub>...].1 for every command and rsl-controller.1
//! into flags.dir and prints their paths. Errors: IO_ERROR naming the file.
void RunMan(const ManFlags& flags);

//! The pages `seedctl man` writes, in memory: seedctl's then rsl-controller's.
std::vector<ManPage> SeedctlManPages(const CLI::App& root, const std::string& date);

}  // namespace rsl::cli
