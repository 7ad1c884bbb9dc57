// What every seedctl command that talks to rsl-controller shares: the connection flags
// (--server, --token, -n/--namespace), -o, building the client, and failing with the
// server's errors (code on the last line, exit 1).
#pragma once

#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <string>

#include "api/client.h"

namespace rsl::cli {

struct ConnFlags {
  std::string server;
  std::string certificate_authority;  //!< PEM CAs for an https server ("" = system CAs)
  std::string client_certificate;     //!< mutual TLS: PEM certificate ("" = none)
  std::string client_key;             //!< ... and its key
  std::string token;
  std::string namespace_;
  std::string output;  //!< "" (table) | json | yaml | wide (| openlineage for lineage)
};

//! Adds --server, --certificate-authority, --client-certificate, --client-key, --token,
//! -n/--namespace (unless `namespaced` is false) to `cmd`.
void AddConnFlags(CLI::App* cmd, ConnFlags* flags, bool namespaced = true);
//! Adds -o/--output restricted to `choices`.
void AddOutputFlag(CLI::App* cmd, ConnFlags* flags, const std::vector<std::string>& choices);

//! A client from the flags, environment and config file; fails (exit 1) on a bad config.
api::Client MakeClient(const ConnFlags& flags);

//! Prints the client's last errors and exits 1 with the code on the last line.
[[noreturn]] void FailWithClient(const api::Client& client);

//! Unwraps a client result or fails with the client's errors.
template <typename T>
T OrFail(const api::Client& client, Result<T> r) {
  if (!r.ok()) FailWithClient(client);
  return std::move(r).value();
}

//! Prints `j` as -o json (pretty) or -o yaml.
void PrintStructured(const nlohmann::json& j, const std::string& output);

//! The path of a namespaced collection: /api/v1/namespaces/<ns>/<what>, or, without -n,
//! /api/v1/<what>?... letting the server pick the token's default namespace.
std::string NamespacedPath(const api::Client& client, const std::string& what);

bool StdoutIsTty();

}  // namespace rsl::cli
