// seedctl token create|list|revoke (docs/cli.md): bearer tokens of rsl-controller, managed in
// its state directory directly (no server needed; a running controller sees the change on the
// next request). Functions print to stdout/stderr and end a failing command by throwing Exit.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace rsl::cli {

struct TokenCreateFlags {
  std::string state_dir;                //!< the controller's
  std::vector<std::string> namespaces;  //!< each may be comma-separated; "*" = all
  std::string role;                     //!< viewer | editor | admin
  std::string subject;                  //!< "" = generated
  std::string ttl;                      //!< "" = never expires; else 30m, 12h, 90d...
};
//! Creates the token in the state directory, audits it and prints it as the last line.
void RunTokenCreate(const TokenCreateFlags& flags);

struct TokenListFlags {
  std::string state_dir;
  std::string output;  //!< "" (table) | json
};
//! The stored tokens: id, subject, role, namespaces, created, expires, last used, status.
void RunTokenList(const TokenListFlags& flags);

struct TokenRevokeFlags {
  std::string state_dir;
  std::string id;  //!< the ID column of `token list` (a prefix of 6+ characters will do)
};
//! Revokes a token (audited); it gets 401 from the next request on.
void RunTokenRevoke(const TokenRevokeFlags& flags);

void RegisterTokenCommands(CLI::App& app);

}  // namespace rsl::cli
