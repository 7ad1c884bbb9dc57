// rsl-controller's settings: the --config file's keys, its errors word for word, and the
// flags over the file.
#include "cli/controller_config.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "base/test_util.h"

namespace rsl::cli {
namespace {

// ParseControllerCommandLine over `args` (argv[0] added).
std::optional<int> ParseArgs(std::vector<std::string> args, ControllerFlags* f) {
  args.insert(args.begin(), "rsl-controller");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return ParseControllerCommandLine(static_cast<int>(argv.size()), argv.data(), f);
}

std::string ErrorOf(const std::string& yaml) {
  ControllerFlags f;
  Status st = ParseControllerConfig(yaml, "/etc/rsl/controller.yaml", &f);
  return st.ok() ? "OK" : st.error().ToString();
}

TEST(ControllerConfigTest, KeysAreTheFlagsInCamelCase) {
  EXPECT_EQ(ConfigKeyOfFlag("tls-client-ca"), "tlsClientCa");
  EXPECT_EQ(ConfigKeyOfFlag("k8s-namespace"), "k8sNamespace");
  EXPECT_EQ(ConfigKeyOfFlag("listen"), "listen");
  // Every flag but --config and --rotate-key (an action) has its key.
  ControllerFlags f;
  CLI::App app;
  AddControllerFlags(app, &f);
  std::vector<std::string> keys = ControllerConfigKeys();
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& name : o->get_lnames()) {
      if (name == "help" || name == "config" || name == "rotate-key") continue;
      EXPECT_NE(std::find(keys.begin(), keys.end(), ConfigKeyOfFlag(name)), keys.end()) << name;
    }
  }
  EXPECT_EQ(keys.size(), 28u);
}

TEST(ControllerConfigTest, ReadsEveryKindOfValue) {
  ControllerFlags f;
  Status st = ParseControllerConfig(
      "# the controller\n"
      "listen: 0.0.0.0:7443\n"
      "stateDir: /var/lib/rsl\n"
      "tokens: tokens.csv\n"
      "backend: k8s\n"
      "kubeconfig: /etc/rsl/kubeconfig\n"
      "context: prod\n"
      "k8sNamespace: [risk=rsl-risk, ads=rsl-ads]\n"
      "k8sStaging: s3://stage/rsl\n"
      "insecureRegistry:\n"
      "  - registry.lan:5000\n"
      "retainVersions: 5\n"
      "retainFor: 30d\n"
      "tlsCert: tls/server.crt\n"
      "tlsKey: /etc/rsl/tls/server.key\n"
      "tlsClientCa: ca.pem\n"
      "tlsRequireClientCert: true\n"
      "tlsClientCrl: crl.pem\n"
      "insecureListen: false\n"
      "stepIsolation: users\n"
      "slurmPartition: gpu\n"
      "prices: prices/2026.yaml\n"
      "transitionLog: true\n"
      "nodeFile:\n",  // null: not set
      "/etc/rsl/controller.yaml", &f);
  ASSERT_TRUE(st.ok()) << st.error().ToString();
  EXPECT_EQ(f.listen, "0.0.0.0:7443");
  EXPECT_EQ(f.runtime.state_dir, "/var/lib/rsl");
  EXPECT_EQ(f.tokens_file, "/etc/rsl/tokens.csv");  // relative: from the file's directory
  EXPECT_EQ(f.runtime.backend, "k8s");
  EXPECT_EQ(f.runtime.backend_options.kubeconfig, "/etc/rsl/kubeconfig");
  EXPECT_EQ(f.runtime.backend_options.kube_context, "prod");
  EXPECT_EQ(f.runtime.backend_options.k8s_namespaces,
            (std::vector<std::string>{"risk=rsl-risk", "ads=rsl-ads"}));
  EXPECT_EQ(f.runtime.backend_options.k8s_staging, "s3://stage/rsl");  // a URL, not a path
  EXPECT_EQ(f.runtime.images.insecure_registries, std::vector<std::string>{"registry.lan:5000"});
  EXPECT_EQ(f.retain_versions, 5);
  EXPECT_EQ(f.retain_for, "30d");
  EXPECT_EQ(f.tls_cert, "/etc/rsl/tls/server.crt");
  EXPECT_EQ(f.tls_key, "/etc/rsl/tls/server.key");
  EXPECT_EQ(f.tls_client_ca, "/etc/rsl/ca.pem");
  EXPECT_TRUE(f.tls_require_client_cert);
  EXPECT_EQ(f.tls_client_crl, "/etc/rsl/crl.pem");
  EXPECT_FALSE(f.insecure_listen);
  EXPECT_EQ(f.runtime.backend_options.isolation, "users");
  EXPECT_EQ(f.runtime.backend_options.slurm_partition, "gpu");
  EXPECT_EQ(f.runtime.backend_options.node_file, "");
  EXPECT_EQ(f.runtime.price_file, "/etc/rsl/prices/2026.yaml");
  EXPECT_TRUE(f.runtime.transition_log);
  EXPECT_TRUE(CheckControllerFlags(f).ok());
}

TEST(ControllerConfigTest, TheDocumentedExampleReads) {
  ControllerFlags f;
  std::string example = std::string(RSL_SOURCE_DIR) + "/docs/examples/controller.yaml";
  Status st = LoadControllerConfig(example, &f);
  ASSERT_TRUE(st.ok()) << st.error().ToString();
  EXPECT_EQ(f.listen, "0.0.0.0:7443");
  EXPECT_EQ(f.runtime.state_dir, "/var/lib/rsl");
  EXPECT_EQ(f.tls_cert, std::string(RSL_SOURCE_DIR) + "/docs/examples/tls/server.crt");
  EXPECT_EQ(f.retain_versions, 20);
  EXPECT_TRUE(CheckControllerFlags(f).ok());
}

// The rsl-controller package's /etc/rsl/controller.yaml: loopback only, and every path the
// service writes to under /var/lib/rsl (its unit allows no other: ProtectSystem=strict).
TEST(ControllerConfigTest, ThePackagedConfigReads) {
  ControllerFlags f;
  std::string packaged = std::string(RSL_SOURCE_DIR) + "/packaging/debian/controller.yaml";
  Status st = LoadControllerConfig(packaged, &f);
  ASSERT_TRUE(st.ok()) << st.error().ToString();
  EXPECT_EQ(f.listen, "127.0.0.1:7070");
  EXPECT_EQ(f.runtime.state_dir, "/var/lib/rsl");
  EXPECT_EQ(f.runtime.runs_dir, "/var/lib/rsl/runs");
  EXPECT_EQ(f.runtime.backend, "local");
  EXPECT_FALSE(f.insecure_listen);
  EXPECT_TRUE(CheckControllerFlags(f).ok());
}

TEST(ControllerConfigTest, AnEmptyFileSetsNothing) {
  ControllerFlags f;
  ASSERT_TRUE(ParseControllerConfig("# nothing yet\n", "c.yaml", &f).ok());
  EXPECT_EQ(f.listen, "127.0.0.1:7070");
  EXPECT_EQ(f.runtime.backend, "local");
}

TEST(ControllerConfigTest, AnUnknownKeyNamesTheCloseOne) {
  EXPECT_EQ(ErrorOf("listen: 127.0.0.1:7070\ntlsCertt: a.pem\n"),
            "/etc/rsl/controller.yaml:2:1: CONFIG_INVALID tlsCertt: unknown field \"tlsCertt\" "
            "(did you mean 'tlsCert'?)");
  // The flag's spelling is a close miss too.
  EXPECT_EQ(ErrorOf("state-dir: /var/lib/rsl\n"),
            "/etc/rsl/controller.yaml:1:1: CONFIG_INVALID state-dir: unknown field "
            "\"state-dir\" (did you mean 'stateDir'?)");
  // Nothing close: every key is listed.
  std::string far = ErrorOf("colour: blue\n");
  EXPECT_EQ(far.rfind("/etc/rsl/controller.yaml:1:1: CONFIG_INVALID colour: unknown field "
                      "\"colour\" (allowed here: listen, stateDir, nodeFile, ",
                      0),
            0u)
      << far;
}

TEST(ControllerConfigTest, AWrongTypeSaysWhatWasExpected) {
  EXPECT_EQ(ErrorOf("stateDir: /s\nretainVersions: lots\n"),
            "/etc/rsl/controller.yaml:2:17: CONFIG_INVALID retainVersions: must be an integer, "
            "got \"lots\" (write a number in 0..2147483647)");
  EXPECT_EQ(ErrorOf("insecureListen: maybe\n"),
            "/etc/rsl/controller.yaml:1:17: CONFIG_INVALID insecureListen: must be true or "
            "false, got \"maybe\" (write true or false, unquoted)");
  EXPECT_EQ(ErrorOf("k8sNamespace: risk=rsl-risk\n"),
            "/etc/rsl/controller.yaml:1:15: CONFIG_INVALID k8sNamespace: must be a list, got "
            "\"risk=rsl-risk\" (write a list: [\"a\", \"b\"])");
  EXPECT_EQ(ErrorOf("listen: {host: a}\n"),
            "/etc/rsl/controller.yaml:1:9: CONFIG_INVALID listen: must be a string, got a "
            "mapping (quote the value)");
  EXPECT_EQ(ErrorOf("- listen\n"),
            "/etc/rsl/controller.yaml:1:1: CONFIG_INVALID: must be a mapping, got a list "
            "(write `key: value` lines indented under it)");
  std::string syntax = ErrorOf("listen: [\n");  // YAML syntax: the same code, with the place
  EXPECT_EQ(syntax.rfind("/etc/rsl/controller.yaml:", 0), 0u) << syntax;
  EXPECT_NE(syntax.find(": CONFIG_INVALID: "), std::string::npos) << syntax;
}

TEST(ControllerConfigTest, FlagsOverrideTheFile) {
  rsl::testing::TempDir dir("controller-config");
  std::string file = dir.Write("controller.yaml",
                               "listen: 0.0.0.0:7443\n"
                               "stateDir: state\n"
                               "insecureRegistry: [a:5000, b:5000]\n"
                               "retainVersions: 3\n"
                               "insecureListen: true\n");
  ControllerFlags f;
  auto rc = ParseArgs({"--listen", "127.0.0.1:0", "--config", file, "--insecure-registry", "c:5000",
                       "--insecure-listen=false"},
                      &f);
  ASSERT_FALSE(rc.has_value()) << *rc;
  EXPECT_EQ(f.config, file);
  EXPECT_EQ(f.listen, "127.0.0.1:0");              // the flag
  EXPECT_EQ(f.runtime.state_dir, dir / "state");   // the file, from its directory
  EXPECT_EQ(f.runtime.images.insecure_registries,  // a repeated flag replaces the list
            std::vector<std::string>{"c:5000"});
  EXPECT_EQ(f.retain_versions, 3);  // the file
  EXPECT_FALSE(f.insecure_listen);  // the flag, though false

  // --config=FILE reads the same; without --config nothing is read.
  ControllerFlags g;
  ASSERT_FALSE(ParseArgs({"--config=" + file}, &g).has_value());
  EXPECT_EQ(g.listen, "0.0.0.0:7443");
  EXPECT_TRUE(g.insecure_listen);
  ControllerFlags h;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(ParseArgs({"--listen", "127.0.0.1:0"}, &h), std::optional<int>(1));
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("INVALID_ARGUMENT --state-dir: no state directory (pass --state-dir "
                     "(config key stateDir), e.g. /var/lib/rsl)"),
            std::string::npos)
      << err;
}

TEST(ControllerConfigTest, AFileErrorEndsTheCommandLine) {
  rsl::testing::TempDir dir("controller-config");
  std::string file = dir.Write("controller.yaml", "stateDir: /s\nlisten: 1\nlistn: 2\n");
  ControllerFlags f;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(ParseArgs({"--config", file}, &f), std::optional<int>(1));
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "rsl-controller: " + file +
                     ":3:1: CONFIG_INVALID listn: unknown field \"listn\" (did you mean "
                     "'listen'?)\nCONFIG_INVALID\n");

  ControllerFlags g;
  Status st = LoadControllerConfig(dir / "missing.yaml", &g);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, "NOT_FOUND");
}

TEST(ControllerConfigTest, MergedSettingsAreCheckedTogether) {
  ControllerFlags f;
  f.runtime.state_dir = "/s";
  f.tls_cert = "/etc/rsl/a.crt";  // from the file
  f.tls_self_signed = true;       // from a flag
  Status st = CheckControllerFlags(f);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().ToString(),
            "INVALID_ARGUMENT --tls-self-signed: --tls-self-signed makes its own key pair; it "
            "excludes --tls-cert and --tls-key (give either --tls-self-signed (config key "
            "tlsSelfSigned) or --tls-cert (config key tlsCert) with --tls-key (config key "
            "tlsKey))");
  ControllerFlags g;
  g.runtime.state_dir = "/s";
  g.tls_client_crl = "/crl.pem";
  st = CheckControllerFlags(g);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "--tls-client-crl needs --tls-client-ca");
}

}  // namespace
}  // namespace rsl::cli
