// rsl-controller's settings: its command-line flags and the YAML file of `--config FILE`
// (docs/controller-config.md). Every flag but --config and --rotate-key has a key, the flag's
// name in camelCase (--tls-client-ca -> tlsClientCa); a flag given on the command line
// overrides the file's key.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/runtime.h"

namespace rsl::cli {

struct ControllerFlags {
  std::string config;  //!< --config: the settings file ("" = none)
  std::string listen = "127.0.0.1:7070";
  std::string tokens_file;
  std::string key_file;
  bool rotate_key = false;
  std::string tls_cert;
  std::string tls_key;
  bool insecure_listen = false;
  bool tls_self_signed = false;
  int retain_versions = 0;
  std::string retain_for;
  std::string tls_client_ca;
  bool tls_require_client_cert = false;
  std::string tls_client_crl;
  runtime::RuntimeOptions runtime;
};

//! Declares rsl-controller's flags (--config included) on `app`, writing into `*f`.
void AddControllerFlags(CLI::App& app, ControllerFlags* f);

//! The config file's key for a flag's long name: "tls-client-ca" -> "tlsClientCa".
std::string ConfigKeyOfFlag(const std::string& flag);
//! Every key of the config file, in the order of `rsl-controller --help`.
std::vector<std::string> ControllerConfigKeys();

//! Sets the fields of `*f` that `yaml` (the contents of `file`) names; the others keep their
//! values. A relative path is taken from the file's directory. Errors: CONFIG_INVALID at
//! file:line:column with the key's path: YAML syntax, an unknown key (with the close valid
//! key as the hint), a value of the wrong type.
Status ParseControllerConfig(const std::string& yaml, const std::string& file, ControllerFlags* f);
//! ParseControllerConfig of the file at `path`. Errors: its, IO_ERROR / NOT_FOUND.
Status LoadControllerConfig(const std::string& path, ControllerFlags* f);

//! What flags and file must agree on once merged: a state directory, --tls-self-signed without
//! --tls-cert/--tls-key, the client certificate settings only with --tls-client-ca.
//! Errors: INVALID_ARGUMENT naming the flag (and its config key).
Status CheckControllerFlags(const ControllerFlags& f);

//! The whole command line: the file of --config first, then the flags over it, then
//! CheckControllerFlags. nullopt: go on with `*f`; otherwise the exit code to end with (0
//! after --help; 1 after an error, printed to stderr with its code on the last line).
std::optional<int> ParseControllerCommandLine(int argc, char** argv, ControllerFlags* f);

}  // namespace rsl::cli
