#include "cli/workload_client.h"

#include <unistd.h>

#include <iostream>

#include "cli/cli.h"
#include "cli/workload_format.h"

namespace rsl::cli {

void AddConnFlags(CLI::App* cmd, ConnFlags* flags, bool namespaced) {
  cmd->add_option("--server", flags->server,
                  "controller URL (env SEEDCTL_SERVER, config `server:`; default "
                  "http://127.0.0.1:7070)");
  cmd->add_option("--certificate-authority", flags->certificate_authority,
                  "PEM file of the CAs an https --server is checked against (env "
                  "SEEDCTL_CERTIFICATE_AUTHORITY, config `certificate-authority:`; default: the "
                  "system's CAs)");
  cmd->add_option("--client-certificate", flags->client_certificate,
                  "mutual TLS: PEM client certificate (with --client-key; env "
                  "SEEDCTL_CLIENT_CERTIFICATE, config `client-certificate:`)");
  cmd->add_option("--client-key", flags->client_key,
                  "PEM private key of --client-certificate (env SEEDCTL_CLIENT_KEY, config "
                  "`client-key:`)");
  cmd->add_option("--token", flags->token, "bearer token (env SEEDCTL_TOKEN, config `token:`)");
  if (namespaced) {
    cmd->add_option("-n,--namespace", flags->namespace_,
                    "namespace (env SEEDCTL_NAMESPACE, config `namespace:`; default: the "
                    "token's first namespace)");
  }
}

void AddOutputFlag(CLI::App* cmd, ConnFlags* flags, const std::vector<std::string>& choices) {
  AddOutput(cmd, &flags->output, choices);
}

api::Client MakeClient(const ConnFlags& flags) {
  auto config = api::ResolveClientConfig(flags.server, flags.token, flags.namespace_,
                                         flags.certificate_authority, flags.client_certificate,
                                         flags.client_key);
  if (!config.ok()) FailWith(config.error());
  return api::Client(*config);
}

void FailWithClient(const api::Client& client) {
  FailWith(client.last_errors().empty() ? Errors{Error("INTERNAL", "request failed")}
                                        : client.last_errors());
}

void PrintStructured(const nlohmann::json& j, const std::string& output) {
  if (output == "yaml") {
    std::cout << JsonToYaml(j);
  } else {
    std::cout << j.dump(2) << "\n";
  }
}

std::string NamespacedPath(const api::Client& client, const std::string& what) {
  const std::string& ns = client.config().namespace_;
  if (ns.empty()) return "/api/v1/" + what;
  return "/api/v1/namespaces/" + api::UrlEncode(ns) + "/" + what;
}

bool StdoutIsTty() { return ::isatty(STDOUT_FILENO) == 1; }

}  // namespace rsl::cli
