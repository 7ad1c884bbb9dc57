// seedctl cluster status, node list, token create, secret create|list, configmap
// create|list and audit (docs/cli.md): the flags of each command and the
// function that runs it. Functions print to stdout/stderr and end a failing command by throwing
// Exit (cli.h).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "cli/workload_client.h"

namespace rsl::cli {

void RunClusterStatus(const ConnFlags& flags);

struct NodeListFlags {
  ConnFlags conn;
  std::string capability;  //!< only nodes offering it; "" = every node
};
void RunNodeList(const NodeListFlags& flags);

struct KeyValueCreateFlags {
  std::string kind;  //!< secret | configmap: the command, not a flag
  ConnFlags conn;
  std::string name;
  std::vector<std::string> literals;  //!< KEY=VALUE
};
//! Creates or replaces the secret or configmap; never echoes a value.
void RunKeyValueCreate(const KeyValueCreateFlags& flags);

struct KeyValueListFlags {
  std::string kind;  //!< secret | configmap: the command, not a flag
  ConnFlags conn;
};
//! Lists the namespace's secrets (names and keys; no route returns a secret's values) or
//! configmaps.
void RunKeyValueList(const KeyValueListFlags& flags);

struct AuditLogFlags {
  ConnFlags conn;
  std::string id;  //!< only entries about this object; "" = all
  int limit = 1000;
};
void RunAudit(const AuditLogFlags& flags);

}  // namespace rsl::cli
