#include "cli/completion_cmd.h"

#include <cstdlib>
#include <ctime>
#include <iostream>
#include <memory>

#include "base/env.h"
#include "base/strings.h"
#include "cli/cli.h"
#include "cli/completion.h"
#include "cli/controller_config.h"

namespace rsl::cli {

namespace {

constexpr char kProgram[] = "seedctl";
// seedctl's version (spec_cmd.cc prints the same with `seedctl version`).
constexpr char kVersion[] = "seedctl 0.1.0";

//! $SOURCE_DATE_EPOCH (reproducible builds) as a date, else today; UTC.
std::string PageDate() {
  int64_t t = std::time(nullptr);
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH"); epoch && *epoch) {
    t = std::strtoll(epoch, nullptr, 10);
  }
  return FormatUtc(t, "%Y-%m-%d");
}

ManInfo SeedctlInfo(const std::string& date) {
  ManInfo info;
  info.program = kProgram;
  info.version = kVersion;
  info.date = date;
  info.description =
      "seedctl validates, runs and inspects declarative AI workloads (AIWorkload YAML). Local "
      "commands (validate, run, data, datasource, env, model, image, cost...) read files and a "
      "state directory on this machine; controller commands (workload, cluster, node, token, "
      "secret, configmap, audit, config) talk to rsl-controller over HTTP.\n"
      "Each command has its own page: seedctl-COMMAND(1), e.g. seedctl-workload-submit(1); "
      "`seedctl COMMAND --help` prints the same.";
  info.environment = {
      {"SEEDCTL_SERVER", "the controller's URL (default http://127.0.0.1:7070); --server wins"},
      {"SEEDCTL_TOKEN", "the bearer token; --token wins, and a context's tokenFile is not read"},
      {"SEEDCTL_NAMESPACE", "the namespace; -n/--namespace wins"},
      {"SEEDCTL_CONTEXT", "the context of the contexts file to use; --context wins"},
      {"SEEDCTL_CERTIFICATE_AUTHORITY", "CA certificates for an https:// server"},
      {"SEEDCTL_CLIENT_CERTIFICATE", "client certificate for mutual TLS"},
      {"SEEDCTL_CLIENT_KEY", "private key of the client certificate"},
      {"RSL_CONFIG", "the contexts file; --config wins"},
      {"XDG_CONFIG_HOME", "the contexts file is $XDG_CONFIG_HOME/rsl/config.yaml when set"},
      {"RSL_STATE_DIR", "the local state directory of the local commands; --state-dir wins"},
  };
  info.files = {
      {"~/.config/rsl/config.yaml",
       "contexts: which controller, token file, certificate authority and namespace to use "
       "(seedctl config use-context|get-contexts|set-context)"},
      {"~/.local/state/rsl", "the local state directory (runs, images, data sources)"},
  };
  info.see_also = {"rsl-controller(1)"};
  return info;
}

ManInfo ControllerInfo(const std::string& date) {
  ManInfo info;
  info.program = "rsl-controller";
  info.version = kVersion;
  info.date = date;
  info.description =
      "rsl-controller is the RSL daemon: the REST API that seedctl talks to, the engine that "
      "runs workloads on the configured backend (local, slurm or k8s) and the store that keeps "
      "them in its state directory. It recovers unfinished runs when it starts; on SIGTERM or "
      "SIGINT it stops accepting requests and leaves running steps to the next start.\n"
      "Every option but --config and --rotate-key is also a key of the --config file: the "
      "option's name in camelCase (--tls-client-ca is tlsClientCa); an option given on the "
      "command line overrides the file.";
  info.environment = {
      {"RSL_STATE_DIR", "the state directory when --state-dir is not given"},
      {"RSL_SECRET_KEY_FILE", "the key ring that seals secrets; --key-file wins"},
  };
  info.see_also = {"seedctl(1)"};
  info.per_command_pages = false;
  return info;
}

}  // namespace

void RunCompletion(const CompletionFlags& f) {
  CommandNode tree = DescribeApp(*f.root);
  std::cout << (f.shell == "bash" ? BashCompletion(tree, kProgram) : ZshCompletion(tree, kProgram));
}

std::vector<ManPage> SeedctlManPages(const CLI::App& root, const std::string& date) {
  std::vector<ManPage> pages = ManPages(DescribeApp(root), SeedctlInfo(date));
  // rsl-controller's flags are declared by the same function its main uses.
  CLI::App controller{"the RSL daemon (REST API, engine, store)", "rsl-controller"};
  ControllerFlags flags;
  AddControllerFlags(controller, &flags);
  for (auto& page : ManPages(DescribeApp(controller), ControllerInfo(date))) {
    pages.push_back(std::move(page));
  }
  return pages;
}

void RunMan(const ManFlags& f) {
  Env* env = Env::Default();
  if (Status st = env->MakeDirs(f.dir); !st.ok()) FailWith(st.error());
  for (const auto& page : SeedctlManPages(*f.root, f.date.empty() ? PageDate() : f.date)) {
    std::string path = f.dir + "/" + page.file_name;
    if (Status st = env->WriteFile(path, page.text, false); !st.ok()) FailWith(st.error());
    std::cout << path << "\n";
  }
}

void RegisterCompletionCommands(CLI::App& app) {
  auto completion = std::make_shared<CompletionFlags>();
  completion->root = &app;
  CLI::App* cmd = app.add_subcommand("completion", "Print a bash or zsh completion script");
  cmd->add_option("shell", completion->shell, "bash | zsh")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh"}));
  cmd->footer(
      "Install for every user:\n"
      "  seedctl completion bash > /usr/share/bash-completion/completions/seedctl\n"
      "  seedctl completion zsh > /usr/share/zsh/vendor-completions/_seedctl\n"
      "or for one shell session (or in ~/.bashrc / ~/.zshrc after compinit):\n"
      "  source <(seedctl completion bash)\n"
      "Commands, subcommands, options, output formats and file arguments complete; workload "
      "and context names do not (the script does not ask the controller).");
  Bind(cmd, completion, &RunCompletion);

  auto man = std::make_shared<ManFlags>();
  man->root = &app;
  cmd = app.add_subcommand("man", "Write seedctl's and rsl-controller's man pages to a directory");
  cmd->add_option("dir", man->dir, "directory for the pages (created if missing)")->required();
  cmd->add_option("--date", man->date,
                  "the pages' date, YYYY-MM-DD (default: $SOURCE_DATE_EPOCH's date, else today)");
  cmd->footer(
      "Writes seedctl.1, one page per command (seedctl-workload.1, seedctl-workload-list.1, "
      "...) and rsl-controller.1. View one with: man -l DIR/seedctl.1");
  Bind(cmd, man, &RunMan);
}

}  // namespace rsl::cli
