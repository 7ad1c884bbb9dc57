#include "cli/config_cmd.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include "api/client_contexts.h"
#include "base/codes.h"
#include "base/strings.h"
#include "cli/cli.h"
#include "cli/table.h"

namespace rsl::cli {

namespace {

api::ContextsFile Load(const std::string& path) {
  Result<api::ContextsFile> file = api::LoadContexts(path);
  if (!file.ok()) FailWith(file.error());
  return std::move(file).value();
}

void Save(const api::ContextsFile& file, const std::string& path) {
  Status st = api::SaveContexts(file, path);
  if (!st.ok()) FailWith(st.error());
}

[[noreturn]] void FailUnknown(const api::ContextsFile& file, const std::string& name,
                              const std::string& path) {
  FailWith(Error(codes::kNotFound, "no context named " + Quote(name) + " in " + path)
               .Value(name)
               .Hint("known contexts: " + file.Names() +
                     "; seedctl config set-context NAME --server URL creates one"));
}

// A path given on the command line, as seen from the working directory (the file is read
// from anywhere later).
std::string Absolute(const std::string& path) {
  if (path.empty()) return path;
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

}  // namespace

void RunGetContexts(const ConfigFlags&) {
  std::string path = api::ContextsPath();
  api::ContextsFile file = Load(path);
  Table t({"CURRENT", "NAME", "SERVER", "NAMESPACE"});
  for (const auto& c : file.contexts) {
    t.AddRow({c.name == file.current_context ? "*" : "", c.name, c.server, c.namespace_});
  }
  std::cout << t.Render();
}

void RunUseContext(const ConfigFlags& flags) {
  std::string path = api::ContextsPath();
  api::ContextsFile file = Load(path);
  if (!file.Find(flags.name)) FailUnknown(file, flags.name, path);
  file.current_context = flags.name;
  Save(file, path);
  std::cout << "Switched to context " << Quote(flags.name) << ".\n";
}

void RunSetContext(const ConfigFlags& flags) {
  std::string path = api::ContextsPath();
  api::ContextsFile file = Load(path);
  auto it = std::find_if(file.contexts.begin(), file.contexts.end(),
                         [&](const api::Context& c) { return c.name == flags.name; });
  bool created = it == file.contexts.end();
  api::Context* c = created ? &file.contexts.emplace_back() : &*it;
  c->name = flags.name;
  auto set = [&](const char* flag, std::string* field, const std::string& value) {
    if (flags.cleared.count(flag)) {
      field->clear();
    } else if (!value.empty()) {
      *field = value;
    }
  };
  set("server", &c->server, flags.server);
  set("token-file", &c->token_file, Absolute(flags.token_file));
  set("certificate-authority", &c->certificate_authority, Absolute(flags.certificate_authority));
  set("client-certificate", &c->client_certificate, Absolute(flags.client_certificate));
  set("client-key", &c->client_key, Absolute(flags.client_key));
  set("namespace", &c->namespace_, flags.namespace_);
  Save(file, path);
  std::cout << "Context " << Quote(flags.name) << (created ? " created" : " modified") << " in "
            << path << ".\n";
}

void RunCurrentContext(const ConfigFlags&) {
  std::string path = api::ContextsPath();
  api::ContextsFile file = Load(path);
  if (file.current_context.empty()) {
    FailWith(Error(codes::kNotFound, "no current context in " + path)
                 .Hint("known contexts: " + file.Names() + "; seedctl config use-context NAME"));
  }
  std::cout << file.current_context << "\n";
}

void RunDeleteContext(const ConfigFlags& flags) {
  std::string path = api::ContextsPath();
  api::ContextsFile file = Load(path);
  if (!file.Find(flags.name)) FailUnknown(file, flags.name, path);
  std::erase_if(file.contexts, [&](const api::Context& c) { return c.name == flags.name; });
  bool was_current = file.current_context == flags.name;
  if (was_current) file.current_context.clear();
  Save(file, path);
  std::cout << "Deleted context " << Quote(flags.name) << " from " << path
            << (was_current ? "; no context is current now" : "") << ".\n";
}

void RegisterConfigCommands(CLI::App& app) {
  CLI::App* config = app.add_subcommand(
      "config", "Contexts: named controllers (server, token file, CA, namespace), as kubectl's");
  config->require_subcommand(1);

  auto get = std::make_shared<ConfigFlags>();
  CLI::App* cmd = config->add_subcommand("get-contexts", "List the contexts; * marks the current");
  Bind(cmd, get, &RunGetContexts);

  auto use = std::make_shared<ConfigFlags>();
  cmd = config->add_subcommand("use-context", "Make a context the current one");
  cmd->add_option("name", use->name, "the context")->required();
  Bind(cmd, use, &RunUseContext);

  auto set = std::make_shared<ConfigFlags>();
  cmd = config->add_subcommand("set-context",
                               "Create a context, or set the given fields of an existing one");
  cmd->add_option("name", set->name, "the context")->required();
  // Given empty (`--namespace ""`), a field is cleared.
  auto field = [&](const std::string& names, std::string* value, const std::string& help) {
    std::string flag = names.substr(names.rfind("--") + 2);
    cmd->add_option(names, *value, help + " (\"\" clears it)")
        ->each([set, flag](const std::string& v) {
          if (v.empty()) set->cleared.insert(flag);
        });
  };
  field("--server", &set->server, "controller URL, e.g. https://rsl.example:7443");
  field("--token-file", &set->token_file,
        "file holding the bearer token (the file's path is stored, never the token)");
  field("--certificate-authority", &set->certificate_authority,
        "PEM file of the CAs an https server is checked against");
  field("--client-certificate", &set->client_certificate,
        "mutual TLS: PEM client certificate (with --client-key)");
  field("--client-key", &set->client_key, "PEM private key of --client-certificate");
  field("-n,--namespace", &set->namespace_, "namespace the context's commands use");
  Bind(cmd, set, &RunSetContext);

  auto current = std::make_shared<ConfigFlags>();
  cmd = config->add_subcommand("current-context", "Print the current context's name");
  Bind(cmd, current, &RunCurrentContext);

  auto del = std::make_shared<ConfigFlags>();
  cmd = config->add_subcommand("delete-context", "Remove a context");
  cmd->add_option("name", del->name, "the context")->required();
  Bind(cmd, del, &RunDeleteContext);
}

}  // namespace rsl::cli
