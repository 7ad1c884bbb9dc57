// seedctl validate / version (docs/spec.md).
#include "cli/spec_cmd.h"

#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "base/codes.h"
#include "cli/cli.h"
#include "spec/capabilities.h"
#include "spec/parse.h"
#include "spec/workload.h"

namespace rsl::cli {

namespace {

constexpr char kSeedctlVersion[] = "0.1.0";

nlohmann::json ErrorJson(const Error& e) {
  nlohmann::json j = {{"code", e.code},     {"message", e.message}, {"path", e.path},
                      {"file", e.pos.file}, {"line", e.pos.line},   {"column", e.pos.column}};
  if (!e.value.empty()) j["value"] = e.value;
  if (!e.hint.empty()) j["hint"] = e.hint;
  return j;
}

}  // namespace

void RunValidate(const ValidateFlags& opts) {
  spec::ParseOptions parse_options;
  std::unique_ptr<spec::CapabilityCatalog> catalog;
  if (!opts.capabilities_file.empty()) {
    auto loaded = spec::CapabilityCatalog::Load(opts.capabilities_file);
    if (!loaded.ok()) FailWith(loaded.error());
    catalog = std::make_unique<spec::CapabilityCatalog>(std::move(loaded).value());
    parse_options.catalog = catalog.get();
  }
  Errors all;
  nlohmann::json results = nlohmann::json::array();
  for (const auto& file : opts.files) {
    spec::ParseResult r = spec::ParseWorkloadFile(file, parse_options);
    nlohmann::json item = {{"file", file}, {"valid", r.ok()}};
    if (r.ok()) {
      item["name"] = r.workload.name;
      item["steps"] = r.workload.pipeline.steps.size();
    }
    item["errors"] = nlohmann::json::array();
    item["warnings"] = nlohmann::json::array();
    for (const auto& e : r.errors) item["errors"].push_back(ErrorJson(e));
    for (const auto& e : r.warnings) item["warnings"].push_back(ErrorJson(e));
    results.push_back(item);
    if (opts.output == "json") {
      all.insert(all.end(), r.errors.begin(), r.errors.end());
      continue;
    }
    for (const auto& w : r.warnings) std::cerr << "warning: " << w.ToString() << "\n";
    if (r.ok()) {
      size_t n = r.workload.pipeline.steps.size();
      std::cout << "OK " << r.workload.name << " (" << n << (n == 1 ? " step)" : " steps)") << "\n";
    } else {
      for (const auto& e : r.errors) std::cerr << e.ToString() << "\n";
      all.insert(all.end(), r.errors.begin(), r.errors.end());
    }
  }
  if (opts.output == "json") std::cout << results.dump(2) << "\n";
  if (!all.empty()) {
    std::cerr << all.front().code << "\n";
    throw Exit{1};
  }
}

void RunVersion() {
  std::cout << "seedctl " << kSeedctlVersion << "\n"
            << "apiVersion " << spec::kApiVersion << "\n";
}

void RegisterSpecCommands(CLI::App& app) {
  auto opts = std::make_shared<ValidateFlags>();
  CLI::App* validate = app.add_subcommand(
      "validate", "Check AIWorkload files: every error with file:line:col, code, path and hint");
  validate->add_option("-f,--file", opts->files, "AIWorkload YAML file (repeatable)")
      ->required()
      ->allow_extra_args(false);
  validate->add_option("-o,--output", opts->output, "text (default) or json")
      ->check(CLI::IsMember({"text", "json"}));
  validate->add_option("--capabilities", opts->capabilities_file,
                       "YAML/JSON file extending the built-in GPU capability catalog");
  Bind(validate, opts, &RunValidate);

  CLI::App* version = app.add_subcommand("version", "Print seedctl's version and spec apiVersion");
  version->callback(RunVersion);
}

}  // namespace rsl::cli
