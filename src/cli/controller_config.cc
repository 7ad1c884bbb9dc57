#include "cli/controller_config.h"

#include <climits>
#include <iostream>
#include <variant>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"
#include "spec/reader.h"
#include "spec/yaml_load.h"

namespace rsl::cli {

namespace {

// A path value: a relative one is taken from the config file's directory, so the file reads
// the same whatever directory the controller starts in (a service starts in /).
struct PathValue {
  std::string* target;
};
using Target = std::variant<std::string*, PathValue, bool*, int*, std::vector<std::string>*>;

// One flag that the config file can set too: its long name (the key is its camelCase) and
// where its value goes.
struct Binding {
  const char* flag;
  Target target;
};

// In the order of --help. --config and --rotate-key (an action, not a setting) have no key.
std::vector<Binding> Bindings(ControllerFlags* f) {
  auto& b = f->runtime.backend_options;
  return {
      {"listen", &f->listen},
      {"state-dir", PathValue{&f->runtime.state_dir}},
      {"node-file", PathValue{&b.node_file}},
      {"insecure-registry", &f->runtime.images.insecure_registries},
      {"tokens", PathValue{&f->tokens_file}},
      {"backend", &f->runtime.backend},
      {"kubeconfig", PathValue{&b.kubeconfig}},
      {"context", &b.kube_context},
      {"k8s-namespace", &b.k8s_namespaces},
      {"k8s-staging", &b.k8s_staging},
      {"capability-labels", PathValue{&b.capability_labels}},
      {"slurm-conf", PathValue{&b.slurm_conf}},
      {"slurm-partition", &b.slurm_partition},
      {"slurm-patience", &b.slurm_patience},
      {"step-isolation", &b.isolation},
      {"runs-dir", PathValue{&f->runtime.runs_dir}},
      {"retain-versions", &f->retain_versions},
      {"retain-for", &f->retain_for},
      {"tls-cert", PathValue{&f->tls_cert}},
      {"tls-key", PathValue{&f->tls_key}},
      {"tls-self-signed", &f->tls_self_signed},
      {"tls-client-ca", PathValue{&f->tls_client_ca}},
      {"tls-require-client-cert", &f->tls_require_client_cert},
      {"tls-client-crl", PathValue{&f->tls_client_crl}},
      {"insecure-listen", &f->insecure_listen},
      {"key-file", PathValue{&f->key_file}},
      {"prices", PathValue{&f->runtime.price_file}},
      {"transition-log", &f->runtime.transition_log},
  };
}

std::string Dir(const std::string& file) {
  size_t slash = file.rfind('/');
  if (slash == std::string::npos) return "";
  return slash == 0 ? "/" : file.substr(0, slash);
}

std::string FromDir(const std::string& dir, const std::string& path) {
  if (path.empty() || path[0] == '/' || dir.empty()) return path;
  return dir == "/" ? "/" + path : dir + "/" + path;
}

// Reads one key's value into its target; false (an error recorded in `r`) when its type is
// wrong.
bool Decode(spec::Reader& r, const YAML::Node& node, const std::string& key, const Target& t,
            const std::string& dir) {
  if (auto* s = std::get_if<std::string*>(&t)) {
    auto v = r.String(node, key);
    if (v) **s = *v;
    return v.has_value();
  }
  if (auto* p = std::get_if<PathValue>(&t)) {
    auto v = r.String(node, key);
    if (v) *p->target = FromDir(dir, *v);
    return v.has_value();
  }
  if (auto* b = std::get_if<bool*>(&t)) {
    auto v = r.Bool(node, key);
    if (v) **b = *v;
    return v.has_value();
  }
  if (auto* i = std::get_if<int*>(&t)) {
    auto v = r.Int(node, key, 0, INT_MAX);
    if (v) **i = static_cast<int>(*v);
    return v.has_value();
  }
  auto* list = std::get<std::vector<std::string>*>(t);
  auto v = r.StringList(node, key);
  if (v) *list = *v;
  return v.has_value();
}

// The value of --config in argv ("" when absent); CLI11 parses it again with the rest.
std::string FindConfigArg(int argc, char** argv) {
  std::string config;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") break;
    if (a == "--config" && i + 1 < argc) config = argv[++i];
    if (StartsWith(a, "--config=")) config = a.substr(9);
  }
  return config;
}

bool AsksForHelp(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") break;
    if (a == "-h" || a == "--help") return true;
  }
  return false;
}

std::string FlagAndKey(const std::string& flag) {
  return "--" + flag + " (config key " + ConfigKeyOfFlag(flag) + ")";
}

}  // namespace

std::string ConfigKeyOfFlag(const std::string& flag) {
  std::string key;
  bool upper = false;
  for (char c : flag) {
    if (c == '-') {
      upper = true;
      continue;
    }
    key += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return key;
}

std::vector<std::string> ControllerConfigKeys() {
  ControllerFlags unused;
  std::vector<std::string> keys;
  for (const auto& b : Bindings(&unused)) keys.push_back(ConfigKeyOfFlag(b.flag));
  return keys;
}

Status ParseControllerConfig(const std::string& yaml, const std::string& file, ControllerFlags* f) {
  Result<YAML::Node> root = spec::LoadYaml(yaml, file);
  if (!root.ok()) {
    Error e = root.error();
    e.code = codes::kConfigInvalid;
    return e;
  }
  if (root->IsNull()) return Status::Ok();  // an empty file (or only comments) sets nothing
  std::map<std::string, SourcePos> positions;
  Errors errors;
  spec::Reader r(file, &positions, &errors);
  r.UseCode(codes::kConfigInvalid);
  const std::vector<std::string> keys = ControllerConfigKeys();
  // An unknown key is reported with the close valid one ("did you mean") or all of them.
  if (!r.Map(*root, "", keys) || !errors.empty()) return errors.front();
  const std::string dir = Dir(file);
  for (const auto& b : Bindings(f)) {
    const std::string key = ConfigKeyOfFlag(b.flag);
    if (!spec::Reader::Has(*root, key.c_str())) continue;
    if (!Decode(r, (*root)[key], key, b.target, dir)) return errors.front();
  }
  return Status::Ok();
}

Status LoadControllerConfig(const std::string& path, ControllerFlags* f) {
  if (!PathExists(path)) {
    return Error(codes::kNotFound, "no such config file " + Quote(path))
        .Path("--config")
        .Value(path)
        .Hint("write one from docs/controller-config.md, or leave out --config");
  }
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return text.error();
  return ParseControllerConfig(*text, path, f);
}

Status CheckControllerFlags(const ControllerFlags& f) {
  if (f.runtime.state_dir.empty()) {
    return Error(codes::kInvalidArgument, "no state directory")
        .Path("--state-dir")
        .Hint("pass " + FlagAndKey("state-dir") + ", e.g. /var/lib/rsl");
  }
  if (f.tls_self_signed && (!f.tls_cert.empty() || !f.tls_key.empty())) {
    return Error(codes::kInvalidArgument,
                 "--tls-self-signed makes its own key pair; it excludes --tls-cert and --tls-key")
        .Path("--tls-self-signed")
        .Value(f.tls_cert.empty() ? f.tls_key : f.tls_cert)
        .Hint("give either " + FlagAndKey("tls-self-signed") + " or " + FlagAndKey("tls-cert") +
              " with " + FlagAndKey("tls-key"));
  }
  if (f.tls_client_ca.empty()) {
    const char* flag = f.tls_require_client_cert   ? "tls-require-client-cert"
                       : !f.tls_client_crl.empty() ? "tls-client-crl"
                                                   : nullptr;
    if (flag) {
      return Error(codes::kInvalidArgument, std::string("--") + flag + " needs --tls-client-ca")
          .Path(std::string("--") + flag)
          .Hint("give " + FlagAndKey("tls-client-ca") + ": the CA that client certificates are " +
                "verified against");
    }
  }
  return Status::Ok();
}

void AddControllerFlags(CLI::App& app, ControllerFlags* f) {
  app.add_option("--config", f->config,
                 "YAML settings file: a key per flag, the flag's name in camelCase (--state-dir "
                 "-> stateDir); flags given here override it (docs/controller-config.md)");
  app.add_option("--listen", f->listen, "HOST:PORT to listen on (port 0: any free port)");
  app.add_option("--state-dir", f->runtime.state_dir,
                 "state directory (database, runs, logs); required, here or in --config");
  app.add_option("--node-file", f->runtime.backend_options.node_file,
                 "declared nodes and devices (local backend)");
  app.add_option("--insecure-registry", f->runtime.images.insecure_registries,
                 "a registry (HOST[:PORT]) reached over plain HTTP besides loopback ones; "
                 "repeatable (docs/image.md)");
  app.add_option("--tokens", f->tokens_file, "static tokens file: token,subject,role,ns1;ns2");
  app.add_option("--backend", f->runtime.backend, "local | slurm | k8s");
  app.add_option("--kubeconfig", f->runtime.backend_options.kubeconfig,
                 "k8s: kubeconfig file (default $KUBECONFIG, ~/.kube/config, in-cluster)");
  app.add_option("--context", f->runtime.backend_options.kube_context,
                 "k8s: kubeconfig context (default: current)");
  app.add_option("--k8s-namespace", f->runtime.backend_options.k8s_namespaces,
                 "k8s: RSLNS=K8SNS namespace mapping; repeatable (default: the same name)");
  app.add_option("--k8s-staging", f->runtime.backend_options.k8s_staging,
                 "k8s: where pods write outputs: s3://bucket/prefix or file:///shared/dir");
  app.add_option("--capability-labels", f->runtime.backend_options.capability_labels,
                 "k8s: capability -> node label table file (docs/backends/k8s.md)");
  app.add_option("--slurm-conf", f->runtime.backend_options.slurm_conf,
                 "SLURM_CONF for --backend slurm");
  app.add_option("--slurm-partition", f->runtime.backend_options.slurm_partition,
                 "partition for --backend slurm");
  app.add_option("--slurm-patience", f->runtime.backend_options.slurm_patience,
                 "how long live steps wait for an unreachable slurmctld before they fail "
                 "(default 5m)");
  app.add_option(
      "--step-isolation", f->runtime.backend_options.isolation,
      "who steps run as: auto | users | user:NAME | namespace | none (docs/security.md)");
  app.add_option("--runs-dir", f->runtime.runs_dir,
                 "where run directories live (default: <state-dir>-runs)");
  app.add_option("--retain-versions", f->retain_versions,
                 "retention: keep the history of the newest N finished runs of each workload "
                 "name (0: all; docs/api.md, Retention)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--retain-for", f->retain_for,
                 "retention: keep a finished run's history this long, e.g. 7d (default: forever)");
  app.add_option("--tls-cert", f->tls_cert, "serve HTTPS: PEM certificate chain (with --tls-key)");
  app.add_option("--tls-key", f->tls_key, "PEM private key of --tls-cert");
  app.add_flag("--tls-self-signed", f->tls_self_signed,
               "serve HTTPS with a key pair made on first start in the state directory "
               "(tls.crt, tls.key); prints its fingerprint; excludes --tls-cert");
  app.add_option(
      "--tls-client-ca", f->tls_client_ca,
      "mutual TLS: ask clients for a certificate and verify it against this PEM CA file; a "
      "verified certificate authenticates as CN=subject, O=namespace:role (docs/security.md)");
  app.add_flag("--tls-require-client-cert", f->tls_require_client_cert,
               "with --tls-client-ca: refuse the TLS handshake of a client without a certificate "
               "(default: such clients authenticate with bearer tokens)");
  app.add_option("--tls-client-crl", f->tls_client_crl,
                 "with --tls-client-ca: refuse client certificates these PEM revocation lists "
                 "revoke (read again when the file changes; a CA without a list fails closed)");
  app.add_flag("--insecure-listen", f->insecure_listen,
               "allow plain HTTP on an address other than loopback (tokens and secrets would "
               "cross the network in clear)");
  app.add_option("--key-file", f->key_file,
                 "key ring sealing secrets at rest (default <state-dir>/secret.key; env "
                 "RSL_SECRET_KEY_FILE)");
  app.add_option("--prices", f->runtime.price_file,
                 "price table YAML that cost accounting uses (default <state-dir>/prices.yaml; "
                 "docs/govern.md)");
  app.add_flag("--transition-log", f->runtime.transition_log,
               "make the engine's transitions durable in an append-only log, written into "
               "rsl.db by a thread of its own; the controller then owns the store (seedctl run "
               "on the same state directory gets CONFLICT; docs/architecture.md)");
  app.add_flag("--rotate-key", f->rotate_key,
               "re-seal every secret with a new key, then exit (stop the controller first)");
}

std::optional<int> ParseControllerCommandLine(int argc, char** argv, ControllerFlags* f) {
  auto fail = [](const Error& e) {
    std::cerr << "rsl-controller: " << e.ToString() << "\n" << e.code << "\n";
    return 1;
  };
  // The file first: the flags CLI11 then parses write over what it set.
  std::string config = FindConfigArg(argc, argv);
  if (!config.empty() && !AsksForHelp(argc, argv)) {
    Status st = LoadControllerConfig(config, f);
    if (!st.ok()) return fail(st.error());
  }
  CLI::App app{"rsl-controller: the RSL daemon (REST API, engine, store)", "rsl-controller"};
  AddControllerFlags(app, f);
  app.footer(
      "rsl-controller detect [--state-dir D] [--output yaml|json]: prints the config file it "
      "would use for the Slurm, Kubernetes, S3 and HDFS this machine can see "
      "(docs/controller-config.md)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (app.exit(e) == 0) return 0;  // --help
    std::cerr << "INVALID_ARGUMENT\n";
    return 1;
  }
  Status st = CheckControllerFlags(*f);
  if (!st.ok()) return fail(st.error());
  return std::nullopt;
}

}  // namespace rsl::cli
