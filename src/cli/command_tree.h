// A CLI11 command tree read into plain values, for what is generated from the commands' own
// help: shell completion scripts (completion.h) and man pages (man_page.h). Walking the live
// App means a command added in any <group>_cmd.cc completes and gets its page without
// touching the generators.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace rsl::cli {

//! What an option's value (or a positional argument) is, as far as completion can tell.
enum class ValueKind {
  kNone,    //!< a flag: takes no value
  kAny,     //!< free text (names, numbers, URLs): nothing to offer
  kChoice,  //!< one of `choices` (CLI::IsMember)
  kFile,    //!< a path to a file (FILE, YAML, PATH, certificates, keys, configs)
  kDir,     //!< a path to a directory
};

struct OptionNode {
  std::vector<std::string> shorts;  //!< without the dash: "o"
  std::vector<std::string> longs;   //!< without the dashes: "output"
  std::string positional;           //!< the positional's name ("" for a flag or an option)
  std::string type_name;            //!< CLI11's value name with validators: "TEXT:{json,yaml}"
  std::string description;
  std::string default_value;  //!< CLI11's default string ("" when none is captured)
  std::string env;            //!< environment variable CLI11 reads it from ("" = none)
  bool required = false;
  bool repeatable = false;  //!< takes several values (a vector)
  ValueKind kind = ValueKind::kNone;
  std::vector<std::string> choices;  //!< for kChoice

  //! "-o, --output" / "FILE" (positional).
  std::string Names() const;
  //! The value's placeholder for help and man pages: "FORMAT", "FILE", "N"... ("" for a flag).
  std::string Placeholder() const;
};

struct CommandNode {
  std::string name;               //!< "list" (the root: the program's name)
  std::vector<std::string> path;  //!< from the root, without the program: {"workload", "list"}
  std::string description;
  std::string footer;
  std::vector<OptionNode> options;      //!< this command's own flags and options (help first)
  std::vector<OptionNode> positionals;  //!< in order
  std::vector<CommandNode> subcommands;
  bool requires_subcommand = false;
  bool fallthrough = false;  //!< options of the parent are accepted here too (CLI11 fallthrough)

  //! "seedctl workload list" given the program's name.
  std::string FullName(const std::string& program) const;
  //! Every command under this one (depth first, parents before children), this one first.
  std::vector<const CommandNode*> Flatten() const;
};

//! Reads `app` and its subcommands at every depth. Hidden subcommands and options (empty
//! group) are left out.
CommandNode DescribeApp(const CLI::App& app);

//! The options that `node` accepts: its own, then those of its ancestors while fallthrough
//! lets them through (seedctl's --config and --context are accepted by every command).
//! `ancestors` are from the root down to the parent.
std::vector<OptionNode> AcceptedOptions(const std::vector<const CommandNode*>& ancestors,
                                        const CommandNode& node);

}  // namespace rsl::cli
