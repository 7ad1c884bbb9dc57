// seedctl cluster status, node list, token (token_cmd.cc), secret create|list, configmap
// create|list and audit (docs/cli.md).
#include "cli/workload_admin_cmd.h"

#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>

#include "api/audit.h"
#include "api/auth.h"
#include "api/client.h"
#include "base/codes.h"
#include "cli/cli.h"
#include "cli/token_cmd.h"
#include "cli/workload_client.h"
#include "cli/workload_format.h"

namespace rsl::cli {

namespace {

//! -n, or the namespace the server defaults the token to.
std::string NamespaceOrDefault(api::Client& client) {
  if (!client.config().namespace_.empty()) return client.config().namespace_;
  auto who = OrFail(client, client.Get("/api/v1/whoami"));
  return who.value("defaultNamespace", "default");
}

}  // namespace

void RunClusterStatus(const ConnFlags& f) {
  api::Client client = MakeClient(f);
  auto s = OrFail(client, client.Get("/api/v1/cluster/status"));
  if (!f.output.empty()) return PrintStructured(s, f.output);
  std::cout << FormatClusterStatus(s);
}

void RunNodeList(const NodeListFlags& f) {
  api::Client client = MakeClient(f.conn);
  auto nodes = OrFail(
      client, client.Get("/api/v1/nodes" + api::QueryString({{"capability", f.capability}})));
  if (f.conn.output == "json" || f.conn.output == "yaml") {
    return PrintStructured(nodes, f.conn.output);
  }
  std::cout << FormatNodes(nodes, f.conn.output == "wide");
}

void RunKeyValueCreate(const KeyValueCreateFlags& f) {
  std::string resource = f.kind == "secret" ? "secrets" : "configmaps";
  nlohmann::json data = nlohmann::json::object();
  for (const auto& lit : f.literals) {
    size_t eq = lit.find('=');
    if (eq == std::string::npos || eq == 0) {
      // Never echo the literal: it may be a secret value.
      FailWith(Error(codes::kInvalidArgument, "--from-literal needs KEY=VALUE")
                   .Path("--from-literal")
                   .Hint("e.g. --from-literal PASSWORD=..."));
    }
    data[lit.substr(0, eq)] = lit.substr(eq + 1);
  }
  api::Client client = MakeClient(f.conn);
  std::string ns = NamespaceOrDefault(client);
  nlohmann::json body = {{"name", f.name}, {"data", data}};
  auto created =
      OrFail(client,
             client.Post("/api/v1/namespaces/" + api::UrlEncode(ns) + "/" + resource, body.dump()));
  std::cout << f.kind << "/" << f.name << " created in namespace " << ns << "\n";
  // E.g. a secret value too short to be masked in logs.
  if (created.contains("warnings") && created["warnings"].is_array()) {
    for (const auto& w : created["warnings"]) {
      if (w.is_string()) std::cerr << "warning: " << w.get<std::string>() << "\n";
    }
  }
}

void RunKeyValueList(const KeyValueListFlags& f) {
  api::Client client = MakeClient(f.conn);
  std::string ns = NamespaceOrDefault(client);
  std::string resource = f.kind == "secret" ? "secrets" : "configmaps";
  auto list =
      OrFail(client, client.Get("/api/v1/namespaces/" + api::UrlEncode(ns) + "/" + resource));
  if (!f.conn.output.empty()) return PrintStructured(list, f.conn.output);
  std::cout << FormatKeyValueList(list, ns);
}

void RunAudit(const AuditLogFlags& f) {
  api::Client client = MakeClient(f.conn);
  auto entries = OrFail(
      client,
      client.Get("/api/v1/audit" + api::QueryString({{"namespace", client.config().namespace_},
                                                     {"id", f.id},
                                                     {"limit", std::to_string(f.limit)}})));
  if (!f.conn.output.empty()) return PrintStructured(entries, f.conn.output);
  std::cout << FormatAudit(entries);
}

namespace {

void KeyValueCreate(CLI::App& app, const std::string& kind) {
  auto o = std::make_shared<KeyValueCreateFlags>();
  o->kind = kind;
  CLI::App* group = app.add_subcommand(
      kind, kind == "secret" ? "Secrets (write-only; steps get them through envFrom secretRef)"
                             : "ConfigMaps (steps get them through envFrom configMapRef)");
  group->require_subcommand(1);
  CLI::App* cmd = group->add_subcommand("create", "Create or replace a " + kind);
  cmd->add_option("name", o->name, "the " + kind + "'s name")->required();
  cmd->add_option("--from-literal", o->literals, "KEY=VALUE (repeatable)")->required();
  AddConnFlags(cmd, &o->conn);
  Bind(cmd, o, &RunKeyValueCreate);

  auto l = std::make_shared<KeyValueListFlags>();
  l->kind = kind;
  cmd = group->add_subcommand(
      "list", kind == "secret" ? "Secrets of a namespace: names and keys, never values"
                               : "ConfigMaps of a namespace: names and keys (-o json: values)");
  AddConnFlags(cmd, &l->conn);
  AddOutputFlag(cmd, &l->conn, {"json", "yaml"});
  Bind(cmd, l, &RunKeyValueList);
}

}  // namespace

void RegisterWorkloadAdminCommands(CLI::App& app) {
  auto cluster_flags = std::make_shared<ConnFlags>();
  CLI::App* cluster = app.add_subcommand("cluster", "Cluster-wide state (admin)");
  cluster->require_subcommand(1);
  CLI::App* cmd = cluster->add_subcommand("status", "Controller, data sources and nodes");
  AddConnFlags(cmd, cluster_flags.get(), false);
  AddOutputFlag(cmd, cluster_flags.get(), {"json", "yaml"});
  Bind(cmd, cluster_flags, &RunClusterStatus);

  auto nodes = std::make_shared<NodeListFlags>();
  CLI::App* node = app.add_subcommand("node", "Nodes the backend offers (admin)");
  node->require_subcommand(1);
  cmd = node->add_subcommand("list", "Nodes, their devices and capabilities");
  cmd->add_option("--capability", nodes->capability, "only nodes offering this capability");
  AddConnFlags(cmd, &nodes->conn, false);
  AddOutputFlag(cmd, &nodes->conn, {"json", "yaml", "wide"});
  Bind(cmd, nodes, &RunNodeList);

  RegisterTokenCommands(app);

  KeyValueCreate(app, "secret");
  KeyValueCreate(app, "configmap");

  auto audit = std::make_shared<AuditLogFlags>();
  cmd = app.add_subcommand("audit", "Who did what, when, to which id");
  cmd->add_option("--id", audit->id, "only entries about this object");
  cmd->add_option("--limit", audit->limit, "the latest N entries")->check(CLI::Range(1, 10000));
  AddConnFlags(cmd, &audit->conn);
  AddOutputFlag(cmd, &audit->conn, {"json", "yaml"});
  Bind(cmd, audit, &RunAudit);
}

}  // namespace rsl::cli
