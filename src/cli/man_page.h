// Man pages (roff, man(7) macros) generated from a command tree (command_tree.h), one page per
// command as git and kubectl do: <program>.1 for the program (synopsis, its commands, global
// options, ENVIRONMENT, FILES, EXIT STATUS, SEE ALSO) and <program>-<command>[-<sub>...].1 for
// every command at every depth (synopsis, description, options, the options inherited from
// its parents, its subcommands). Everything the user wrote is escaped for roff.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cli/command_tree.h"

namespace rsl::cli {

struct ManInfo {
  std::string program;  //!< "seedctl"
  std::string version;  //!< "seedctl 0.1.0" (the page footer's source)
  std::string date;     //!< "2026-12-03" (pass a fixed date for reproducible pages)
  std::string manual = "RSL Manual";
  std::string description;  //!< the program page's DESCRIPTION ("" = the root's help text)
  std::vector<std::pair<std::string, std::string>> environment;  //!< variable, meaning
  std::vector<std::pair<std::string, std::string>> files;        //!< path, meaning
  std::vector<std::string> see_also;  //!< other pages, "rsl-controller(1)"
  bool per_command_pages = true;      //!< false: the program's page only (no subcommands)
};

struct ManPage {
  std::string file_name;  //!< "seedctl-workload-list.1"
  std::string text;       //!< the roff source
};

//! The program's page first, then one page per command (depth first).
std::vector<ManPage> ManPages(const CommandNode& root, const ManInfo& info);

//! `text` as roff body text: backslashes as \e, hyphens as \-, a line that would start with
//! '.' or '\'' (a request) guarded with \&. Newlines are kept.
std::string RoffEscape(const std::string& text);

}  // namespace rsl::cli
