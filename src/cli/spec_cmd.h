// seedctl validate / version (docs/spec.md): the flags of each command and the function that
// runs it. Functions print to stdout/stderr and end a failing command by throwing Exit
// (cli.h), as every seedctl command does.
#pragma once

#include <string>
#include <vector>

namespace rsl::cli {

struct ValidateFlags {
  std::vector<std::string> files;
  std::string output = "text";  //!< text | json
  std::string capabilities_file;
};

//! Parses and validates every file: "OK name (n steps)" per valid file and every error
//! (text), or one JSON array of results (-o json). Exit 1 when any file has errors.
void RunValidate(const ValidateFlags& flags);

//! Prints seedctl's version and the spec apiVersion it reads.
void RunVersion();

}  // namespace rsl::cli
