// seedctl's contexts, as kubeconfig's: named controllers (server, token file, CA, client
// certificate, namespace) in one YAML file, and the current one. The file
// ($RSL_CONFIG or seedctl --config, else $XDG_CONFIG_HOME/rsl/config.yaml, else
// ~/.config/rsl/config.yaml):
//
//   currentContext: prod
//   contexts:
//     - name: prod
//       server: https://rsl.example:7443
//       tokenFile: ~/.config/rsl/prod.token     # a FILE holding the token, never the token
//       certificateAuthority: ca.pem            # relative paths: from the file's directory
//       clientCertificate: me.crt
//       clientKey: me.key
//       namespace: risk
//
// api/client.h says where a context stands among flags, environment and defaults.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace rsl::api {

struct Context {
  std::string name;
  std::string server;
  std::string token_file;
  std::string certificate_authority;
  std::string client_certificate;
  std::string client_key;
  std::string namespace_;
};

struct ContextsFile {
  std::string current_context;  //!< "" = none
  std::vector<Context> contexts;

  //! The context called `name`; nullptr when none is.
  const Context* Find(const std::string& name) const;
  //! The names of all contexts, for messages ("a, b" or "none").
  std::string Names() const;
};

//! Where the contexts file is: $RSL_CONFIG, else $XDG_CONFIG_HOME/rsl/config.yaml, else
//! $HOME/.config/rsl/config.yaml ("" when none of them is set).
std::string ContextsPath();

//! A user's config file: $<override_var> when set, else $XDG_CONFIG_HOME/<relative>, else
//! ~/.config/<relative>; "" when none of the three is set.
std::string UserConfigFile(const char* override_var, const std::string& relative);

//! Parses a contexts file (paths as written). Errors: CONFIG_INVALID at file:line:column
//! with the key's path: YAML syntax, an unknown key ("did you mean"), a wrong type, a context
//! without a name or with the name of another.
Result<ContextsFile> ParseContexts(const std::string& yaml, const std::string& file);
//! ParseContexts of `path`; a file that does not exist holds no contexts.
Result<ContextsFile> LoadContexts(const std::string& path);
//! The file's YAML (paths as they are held).
std::string RenderContexts(const ContextsFile& file);
//! Writes the file atomically with mode 0600 (its directory made, 0700, when missing).
Status SaveContexts(const ContextsFile& file, const std::string& path);

//! The context that seedctl uses: the current one, its paths (tokenFile and the PEM files)
//! made absolute from the directory of `path` ("~/" is $HOME); an empty Context when none is
//! current. Errors: NOT_FOUND when currentContext names no context (naming the known ones).
Result<Context> CurrentContext(const ContextsFile& file, const std::string& path);

//! The token in a context's token file (surrounding white space dropped). Errors:
//! INVALID_ARGUMENT naming the context when the file is missing, unreadable or empty.
Result<std::string> ReadContextToken(const Context& context);

}  // namespace rsl::api
