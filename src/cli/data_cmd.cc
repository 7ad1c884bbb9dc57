// seedctl data validate|profile and seedctl datasource register|list|test|scan|remove
// (docs/data.md). Both work directly on a state directory (--state-dir, default
// $RSL_STATE_DIR or ~/.local/state/rsl), whose database holds the datasource catalog.
#include "cli/data_cmd.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "cli/cli.h"
#include "cli/table.h"
#include "data/catalog.h"
#include "data/quality.h"
#include "data/remote.h"
#include "data/scan.h"
#include "schema/schema.h"
#include "spec/parse.h"
#include "spec/parse_data.h"
#include "spec/quantity.h"
#include "spec/yaml_load.h"

namespace rsl::cli {
namespace {

using data::Catalog;
using data::Datasource;

std::unique_ptr<Catalog> OpenCatalog(const std::string& state_dir) {
  auto c = Catalog::Open(state_dir.empty() ? DefaultStateDir() : state_dir);
  if (!c.ok()) FailWith(c.error());
  return std::move(*c);
}

std::string AbsPath(const std::string& p) {
  if (p.empty() || p[0] == '/') return p;
  char* real = ::realpath(p.c_str(), nullptr);
  if (real != nullptr) {
    std::string out = real;
    std::free(real);
    return out;
  }
  const char* pwd = std::getenv("PWD");
  return std::string(pwd ? pwd : ".") + "/" + p;
}

// ---- data validate: the input block ------------------------------------------------------

// A bare `input:` block (or `data: {input: ...}`), read by the parser of spec.data.input.
// `path` is set to the block's path ("input", "data.input") for the data checks' messages.
Result<spec::DataInput> ParseInputBlock(const std::string& file, const std::string& text,
                                        const YAML::Node& root, std::string* path) {
  YAML::Node in = root["input"];
  *path = "input";
  if (!in && root["data"].IsMap() && root["data"]["input"]) {
    in = root["data"]["input"];
    *path = "data.input";
  }
  if (!in) {
    return Error(codes::kSpecInvalid, "expected an AIWorkload or an `input:` block")
        .Path("input")
        .At(SourcePos{file, root.Mark().line + 1, root.Mark().column + 1})
        .Hint("input: {uri: ..., schema: ..., quality: {...}}");
  }
  return spec::ParseDataInputBlock(text, file, in, *path);
}

Result<spec::DataInput> LoadInput(const std::string& file, std::string* path) {
  *path = "spec.data.input";
  auto text = ReadFile(file);
  if (!text.ok()) return Error(codes::kSpecParseError, text.error().message).Value(file);
  auto loaded = spec::LoadYaml(*text, file);
  if (!loaded.ok()) return loaded.error();
  YAML::Node root = *loaded;
  if (root.IsMap() && root["kind"]) {
    auto parsed = spec::ParseWorkloadFile(file);
    if (!parsed.ok()) return parsed.errors.front();
    if (!parsed.workload.data.input) {
      return Error(codes::kSpecInvalid, "the workload has no spec.data.input")
          .Path("spec.data.input")
          .At(SourcePos{file, 0, 0});
    }
    return *parsed.workload.data.input;
  }
  if (!root.IsMap())
    return Error(codes::kSpecInvalid, "expected a YAML mapping").At(SourcePos{file, 1, 1});
  return ParseInputBlock(file, *text, root, path);
}

}  // namespace

// ---- data --------------------------------------------------------------------------------

void RunDataValidate(const DataValidateFlags& f) {
  std::string input_path;
  auto input = LoadInput(f.file, &input_path);
  if (!input.ok()) FailWith(input.error());
  if (!f.uri.empty()) input->uri = f.uri;
  auto catalog = OpenCatalog(f.state_dir);
  data::ValidateOptions opt;
  opt.threads = f.threads;
  opt.input_path = input_path;
  data::ValidationReport r = data::Validate(*input, catalog.get(), opt);
  if (f.output == "json") {
    std::cout << r.ToJson().dump(2) << "\n";
  } else {
    std::string text = r.ToText();
    if (r.status.ok()) {
      std::cout << text;
    } else {
      // Checks to stdout; the failure's code alone on the last line (stderr), like every command.
      std::cout << text.substr(0, text.rfind('\n', text.size() - 2) + 1);
      std::cerr << r.status.error().code << "\n";
    }
  }
  if (!r.status.ok()) throw Exit{1};
}

void RunDataProfile(const DataProfileFlags& flags) {
  auto catalog = OpenCatalog(flags.state_dir);
  data::ValidationReport r = data::Profile(flags.uri, flags.format, catalog.get());
  if (!r.status.ok()) FailWith(r.status.error());
  if (flags.output == "json") {
    std::cout << r.ToJson().dump(2) << "\n";
    return;
  }
  std::cout << r.uri << ": " << r.format << ", " << r.files << " file(s), " << r.rows << " rows, "
            << r.bytes << " bytes\n";
  Table t({"FIELD", "TYPE", "NULLS", "NON-NULL%", "MIN", "MAX"});
  for (const auto& f : r.fields) {
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.2f", r.rows ? 100.0 * (r.rows - f.nulls) / r.rows : 100.0);
    auto num = [](std::optional<double> v, std::optional<int64_t> exact) {
      if (exact) return std::to_string(*exact);  // integers: every digit
      char b[32];
      std::snprintf(b, sizeof b, "%.15g", *v);
      return std::string(b);
    };
    std::string mn = f.min       ? num(f.min, f.min_int)
                     : f.min_len ? "len " + std::to_string(*f.min_len)
                                 : "-";
    std::string mx = f.max       ? num(f.max, f.max_int)
                     : f.max_len ? "len " + std::to_string(*f.max_len)
                                 : "-";
    t.AddRow({f.name, f.type, std::to_string(f.nulls), pct, mn, mx});
  }
  std::cout << t.Render();
  if (r.newest_micros) {
    std::cout << "newest: " << data::FormatTimestampMicros(*r.newest_micros) << " ("
              << r.freshness_from << ")\n";
  }
}

// ---- datasource --------------------------------------------------------------------------

void RunDatasourceRegister(const DatasourceRegisterFlags& f) {
  Datasource d = f.datasource;
  d.kind = f.kind;
  if (f.kind == "hdfs") {
    for (auto& nn : Split(f.namenodes, ',')) {
      std::string t(Trim(nn));
      if (!t.empty()) d.namenodes.push_back(t);
    }
  }
  if (f.kind == "local") d.path = AbsPath(d.path);
  d.path_style = !f.virtual_host;
  auto catalog = OpenCatalog(f.state_dir);
  Status st = catalog->Register(d, f.replace);
  if (!st.ok()) FailWith(st.error());
  std::cout << "datasource " << d.name << " registered (" << f.kind << ")\n";
}

void RunDatasourceList(const DatasourceListFlags& f) {
  auto catalog = OpenCatalog(f.state_dir);
  auto all = catalog->List();
  if (!all.ok()) FailWith(all.error());
  if (f.output == "json") {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& x : *all) j.push_back(x.RedactedJson());
    std::cout << j.dump(2) << "\n";
    return;
  }
  Table t({"NAME", "KIND", "TARGET", "CREATED"});
  for (const auto& x : *all) {
    std::string target;
    if (x.kind == "hdfs")
      target = Join(x.namenodes, ",") + (x.kerberos ? " (kerberos)" : "");
    else if (x.kind == "local")
      target = x.authority + " -> " + x.path;
    else
      target = x.endpoint + (x.bucket.empty() ? "" : " bucket " + x.bucket);
    t.AddRow({x.name, x.kind, target, x.created_at});
  }
  std::cout << t.Render();
}

void RunDatasourceTest(const DatasourceNameFlags& f) {
  auto catalog = OpenCatalog(f.state_dir);
  auto x = catalog->Get(f.name);
  if (!x.ok()) FailWith(x.error());
  auto t0 = std::chrono::steady_clock::now();
  auto r = data::TestDatasource(*x);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!r.ok()) FailWith(r.error());
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f ms", ms);
  std::cout << x->name << " (" << x->kind << "): reachable, " << *r << ", " << buf << "\n";
}

void RunDatasourceScan(const DatasourceScanFlags& f) {
  auto catalog = OpenCatalog(f.state_dir);
  auto x = catalog->Get(f.name);
  if (!x.ok()) FailWith(x.error());
  auto uri = data::DatasourceUri(*x, f.path);
  if (!uri.ok()) FailWith(uri.error());
  auto sets = data::ScanDatasets(*uri, catalog.get());
  if (!sets.ok()) FailWith(sets.error());
  if (f.output == "json") {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& s : *sets) {
      nlohmann::json o = {{"uri", s.uri},
                          {"format", s.format},
                          {"files", s.files},
                          {"bytes", s.bytes},
                          {"partitionKeys", s.partition_keys}};
      if (!s.schema_json.empty())
        o["schema"] = nlohmann::json::parse(s.schema_json, nullptr, false);
      if (!s.error.empty()) o["error"] = s.error;
      j.push_back(o);
    }
    std::cout << j.dump(2) << "\n";
    return;
  }
  Table t({"DATASET", "FORMAT", "FILES", "BYTES", "PARTITIONS"});
  for (const auto& s : *sets) {
    t.AddRow({s.uri, s.format.empty() ? "?" : s.format, std::to_string(s.files),
              std::to_string(s.bytes), Join(s.partition_keys, ",")});
  }
  std::cout << t.Render();
  for (const auto& s : *sets) {
    std::cout << "\n# " << s.uri << "\n";
    if (!s.schema_json.empty())
      std::cout << nlohmann::json::parse(s.schema_json, nullptr, false).dump(2) << "\n";
    else
      std::cout << "# no schema: " << s.error << "\n";
  }
}

void RunDatasourceRemove(const DatasourceNameFlags& f) {
  auto catalog = OpenCatalog(f.state_dir);
  Status st = catalog->Remove(f.name);
  if (!st.ok()) FailWith(st.error());
  std::cout << "datasource " << f.name << " removed\n";
}

namespace {

// One `register <kind>` subcommand: the flags every kind has, then the kind's own.
CLI::App* AddRegisterKind(CLI::App* reg, const std::string& kind, const std::string& help,
                          std::shared_ptr<DatasourceRegisterFlags> f) {
  f->kind = kind;
  CLI::App* c = reg->add_subcommand(kind, help);
  c->add_option("--name", f->datasource.name, "datasource name")->required();
  c->add_flag("--replace", f->replace, "replace a datasource of the same name");
  AddStateDir(c, &f->state_dir);
  Bind(c, f, &RunDatasourceRegister);
  return c;
}

void RegisterDatasource(CLI::App& app) {
  auto* ds = app.add_subcommand("datasource", "datasource catalog: register, list, test, scan");
  ds->require_subcommand(1);

  auto* reg = ds->add_subcommand("register", "register a datasource (hdfs, ceph, s3, local)");
  reg->require_subcommand(1);
  {
    auto f = std::make_shared<DatasourceRegisterFlags>();
    CLI::App* hdfs = AddRegisterKind(reg, "hdfs", "HDFS through WebHDFS", f);
    hdfs->add_option("--namenodes", f->namenodes,
                     "comma-separated host:port (RPC) of the namenodes")
        ->required();
    hdfs->add_flag("--kerberos", f->datasource.kerberos, "the cluster uses Kerberos (SPNEGO)");
    hdfs->add_option("--webhdfs-url", f->datasource.webhdfs_url,
                     "WebHDFS base URL (default http://<namenode>:9870)");
  }
  for (const char* kind : {"ceph", "s3"}) {
    bool ceph = std::string(kind) == "ceph";
    auto f = std::make_shared<DatasourceRegisterFlags>();
    CLI::App* c = AddRegisterKind(
        reg, kind,
        ceph ? "Ceph RADOS Gateway (S3 protocol)" : "Amazon S3 or any S3-compatible store", f);
    Datasource& d = f->datasource;
    auto* ep = c->add_option("--endpoint", d.endpoint, "http(s)://host:port");
    if (ceph) ep->required();
    c->add_option("--access-key", d.access_key, "access key id")->required();
    c->add_option("--secret-key", d.secret_key, "secret access key (stored, never printed)")
        ->required();
    c->add_option("--region", d.region, "signing region (default us-east-1)");
    c->add_option("--bucket", d.bucket, "the bucket this datasource serves (optional)");
    c->add_flag("--virtual-host", f->virtual_host, "virtual-host addressing (bucket.host)");
  }
  {
    auto f = std::make_shared<DatasourceRegisterFlags>();
    CLI::App* local =
        AddRegisterKind(reg, "local", "map a URI authority (hdfs://ns1) onto a directory", f);
    local->add_option("--authority", f->datasource.authority, "scheme://authority, e.g. hdfs://ns1")
        ->required();
    local->add_option("--path", f->datasource.path, "directory that holds the authority's files")
        ->required();
  }

  auto lf = std::make_shared<DatasourceListFlags>();
  auto* list = ds->add_subcommand("list", "list registered datasources (credentials masked)");
  AddStateDir(list, &lf->state_dir);
  list->add_option("-o,--output", lf->output, "text (default) or json");
  Bind(list, lf, &RunDatasourceList);

  auto tf = std::make_shared<DatasourceNameFlags>();
  auto* test = ds->add_subcommand("test", "check reachability, credentials and latency");
  test->add_option("--name", tf->name, "datasource name")->required();
  AddStateDir(test, &tf->state_dir);
  Bind(test, tf, &RunDatasourceTest);

  auto sf = std::make_shared<DatasourceScanFlags>();
  auto* scan = ds->add_subcommand("scan", "list data sets and infer a schema template for each");
  scan->add_option("--name", sf->name, "datasource name")->required();
  scan->add_option("--path", sf->path, "path below the datasource (default /)");
  scan->add_option("-o,--output", sf->output, "text (default) or json");
  AddStateDir(scan, &sf->state_dir);
  Bind(scan, sf, &RunDatasourceScan);

  auto rf = std::make_shared<DatasourceNameFlags>();
  auto* rm = ds->add_subcommand("remove", "remove a datasource");
  rm->add_option("--name", rf->name, "datasource name")->required();
  AddStateDir(rm, &rf->state_dir);
  Bind(rm, rf, &RunDatasourceRemove);
}

}  // namespace

void RegisterDataCommands(CLI::App& app) {
  auto* data = app.add_subcommand("data", "validate and profile data sets");
  data->require_subcommand(1);
  auto vf = std::make_shared<DataValidateFlags>();
  auto* validate = data->add_subcommand(
      "validate", "check an input's existence, schema, constraints and quality");
  validate->add_option("-f,--file", vf->file, "AIWorkload YAML, or a bare `input:` block")
      ->required();
  validate->add_option("--uri", vf->uri, "validate this URI instead of the file's input.uri");
  validate->add_option("-o,--output", vf->output, "text (default) or json");
  validate->add_option("--threads", vf->threads, "worker threads (default: all cores)");
  AddStateDir(validate, &vf->state_dir);
  Bind(validate, vf, &RunDataValidate);

  auto pf = std::make_shared<DataProfileFlags>();
  auto* profile = data->add_subcommand("profile", "per-field statistics of a data set");
  profile->add_option("--uri", pf->uri, "data URI (file://, s3://, ceph://, hdfs://)")->required();
  profile->add_option("--format", pf->format, "avro, csv, jsonl or parquet (default: detect)");
  profile->add_option("-o,--output", pf->output, "text (default) or json");
  AddStateDir(profile, &pf->state_dir);
  Bind(profile, pf, &RunDataProfile);

  RegisterDatasource(app);
}

}  // namespace rsl::cli
