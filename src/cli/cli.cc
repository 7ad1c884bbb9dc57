#include "cli/cli.h"

#include <cstdlib>
#include <iostream>

namespace rsl::cli {

void FailWith(const Errors& errors) {
  for (const auto& e : errors) std::cerr << e.ToString() << "\n";
  std::cerr << (errors.empty() ? std::string("INTERNAL") : errors.front().code) << "\n";
  throw Exit{1};
}

void FailWith(const Error& error) { FailWith(Errors{error}); }

std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 has an exit code per kind of mistake (105, 106, 109...); seedctl has one: a usage
    // error is an error like any other (exit 1, INVALID_ARGUMENT on the last line).
    if (app.exit(e) == 0) return 0;  // --help, --version
    std::cerr << "INVALID_ARGUMENT\n";
    return 1;
  } catch (const Exit& e) {
    return e.exit_code;
  }
  return std::nullopt;
}

std::string DefaultStateDir() {
  if (const char* d = std::getenv("RSL_STATE_DIR"); d && *d) return d;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.local/state/rsl";
}

void AddConfigFileFlag(CLI::App& app) {
  // The contexts file is found through RSL_CONFIG (api/client_contexts.h); the flag sets it
  // before any command runs (options are processed before the commands' callbacks).
  app.add_option_function<std::string>(
      "--config", [](const std::string& path) { ::setenv("RSL_CONFIG", path.c_str(), 1); },
      "contexts file (default: $RSL_CONFIG, else $XDG_CONFIG_HOME/rsl/config.yaml, else "
      "~/.config/rsl/config.yaml)");
  app.add_option_function<std::string>(
      "--context", [](const std::string& name) { ::setenv("SEEDCTL_CONTEXT", name.c_str(), 1); },
      "the context to use for this command (default: $SEEDCTL_CONTEXT, else the file's "
      "currentContext)");
}

void AddStateDir(CLI::App* cmd, std::string* state_dir) {
  cmd->add_option("--state-dir", *state_dir,
                  "state directory (default: $RSL_STATE_DIR or ~/.local/state/rsl)");
}

std::string OutputHelp(const std::vector<std::string>& formats, const std::string& default_format) {
  std::string list;
  for (const auto& f : formats) {
    list += (list.empty() ? "" : "|") + f + (f == default_format ? " (default)" : "");
  }
  return "output format: " + list;
}

void AddOutput(CLI::App* cmd, std::string* output, const std::vector<std::string>& formats) {
  cmd->add_option("-o,--output", *output, OutputHelp(formats, *output))
      ->check(CLI::IsMember(formats));
}

}  // namespace rsl::cli
