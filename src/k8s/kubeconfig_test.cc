#include "k8s/kubeconfig.h"

#include <gtest/gtest.h>

#include "base/codes.h"
#include "base/test_util.h"

namespace rsl::k8s {
namespace {

// base64 of "CA-PEM", "CERT-PEM", "KEY-PEM".
constexpr char kCaData[] = "Q0EtUEVN";
constexpr char kCertData[] = "Q0VSVC1QRU0=";
constexpr char kKeyData[] = "S0VZLVBFTQ==";

std::string Config(const std::string& user, const std::string& cluster_extra = "") {
  return "apiVersion: v1\n"
         "kind: Config\n"
         "current-context: dev\n"
         "clusters:\n"
         "- name: kind\n"
         "  cluster:\n"
         "    server: https://127.0.0.1:6443/\n"
         "    certificate-authority-data: " +
         std::string(kCaData) + "\n" + cluster_extra +
         "contexts:\n"
         "- name: dev\n"
         "  context: {cluster: kind, user: alice, namespace: risk}\n"
         "- name: prod\n"
         "  context: {cluster: kind, user: bob}\n"
         "users:\n"
         "- name: alice\n"
         "  user:\n" +
         user +
         "- name: bob\n"
         "  user: {token: bob-secret-token}\n";
}

TEST(Kubeconfig, CurrentContextWithClientCertificateData) {
  auto c = ParseKubeconfig(Config("    client-certificate-data: " + std::string(kCertData) +
                                  "\n    client-key-data: " + kKeyData + "\n"),
                           "/home/u/.kube/config");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->server, "https://127.0.0.1:6443");
  EXPECT_EQ(c->ca_pem, "CA-PEM");
  EXPECT_EQ(c->client_cert_pem, "CERT-PEM");
  EXPECT_EQ(c->client_key_pem, "KEY-PEM");
  EXPECT_EQ(c->namespace_, "risk");
  EXPECT_EQ(c->context, "dev");
  EXPECT_TRUE(c->token.empty());
}

TEST(Kubeconfig, ExplicitContextWithToken) {
  auto c = ParseKubeconfig(Config("    token: alice-token\n"), "k.yaml", "prod");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->token, "bob-secret-token");
  EXPECT_EQ(c->context, "prod");
  EXPECT_EQ(c->namespace_, "");
  std::string d = c->Describe();
  EXPECT_NE(d.find("bearer token"), std::string::npos) << d;
  EXPECT_EQ(d.find("bob-secret-token"), std::string::npos) << d;
}

TEST(Kubeconfig, FilesRelativeToTheKubeconfig) {
  rsl::testing::TempDir dir("kubeconfig");
  dir.Write("pki/ca.crt", "FILE-CA");
  dir.Write("pki/me.crt", "FILE-CERT");
  dir.Write("pki/me.key", "FILE-KEY");
  dir.Write("token", "file-token\n");
  std::string yaml =
      "current-context: c\n"
      "clusters: [{name: k, cluster: {server: 'https://k:6443', certificate-authority: "
      "pki/ca.crt}}]\n"
      "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
      "users: [{name: u, user: {client-certificate: pki/me.crt, client-key: " +
      dir.path() + "/pki/me.key, tokenFile: token}}]\n";
  std::string path = dir.Write("config", yaml);
  auto c = LoadKubeconfig(path);
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->ca_pem, "FILE-CA");
  EXPECT_EQ(c->client_cert_pem, "FILE-CERT");
  EXPECT_EQ(c->client_key_pem, "FILE-KEY");
  EXPECT_EQ(c->token, "file-token");
}

TEST(Kubeconfig, InsecureSkipTlsVerify) {
  auto c = ParseKubeconfig(Config("    token: t\n", "    insecure-skip-tls-verify: true\n"), "k");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_TRUE(c->insecure_skip_tls_verify);
  EXPECT_NE(c->Describe().find("TLS NOT VERIFIED"), std::string::npos);
}

struct BadCase {
  const char* name;
  std::string yaml;
  std::string context;
  std::string want;  // the whole Error::ToString()
};

TEST(Kubeconfig, ErrorsNameTheFileLineColumnAndField) {
  const std::vector<BadCase> cases = {
      {"exec", Config("    exec:\n      command: aws\n"), "",
       "k.yaml:18:7: KUBECONFIG_INVALID users[0].user.exec: exec credential plugins are not "
       "supported (use a token (e.g. a service account's: kubectl create token NAME) or a "
       "client certificate)"},
      {"auth-provider", Config("    auth-provider: {name: gcp}\n"), "",
       "k.yaml:17:20: KUBECONFIG_INVALID users[0].user.auth-provider: auth-provider plugins "
       "are not supported (use a token or a client certificate)"},
      {"basic", Config("    username: admin\n    password: hunter2\n"), "",
       "k.yaml:17:15: KUBECONFIG_INVALID users[0].user.username: basic authentication "
       "(username/password) is not supported (Kubernetes removed it in 1.19) (use a token or "
       "a client certificate)"},
      {"no such context", Config("    token: t\n"), "staging",
       "k.yaml:10:1: KUBECONFIG_INVALID contexts: no context named \"staging\" "
       "(`kubectl config get-contexts` lists them)"},
      {"bad base64", Config("    client-certificate-data: '%%%'\n    client-key-data: x\n"), "",
       "k.yaml:17:30: KUBECONFIG_INVALID users[0].user.client-certificate-data: not base64 "
       "(write the PEM file's contents base64-encoded, or use client-certificate: PATH)"},
      {"cert without key", Config("    client-certificate-data: " + std::string(kCertData) + "\n"),
       "",
       "k.yaml:17:5: KUBECONFIG_INVALID users[0].user.client-key: missing: a client "
       "certificate needs both client-certificate and client-key"},
      {"not yaml", "clusters: [\n", "", ""},
      {"server",
       "current-context: c\nclusters: [{name: k, cluster: {server: 'k:6443'}}]\n"
       "contexts: [{name: c, context: {cluster: k}}]\n",
       "",
       "k.yaml:2:40: KUBECONFIG_INVALID clusters[0].cluster.server: not an http(s) URL "
       "(write server: https://HOST:PORT)"},
  };
  for (const auto& c : cases) {
    auto r = ParseKubeconfig(c.yaml, "k.yaml", c.context);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.error().code, codes::kKubeconfigInvalid) << c.name;
    if (!c.want.empty()) {
      EXPECT_EQ(r.error().ToString(), c.want) << c.name;
    }
    EXPECT_EQ(r.error().ToString().find("hunter2"), std::string::npos);
  }
}

TEST(Kubeconfig, OddShapesAreErrorsNotCrashes) {
  const std::vector<std::string> cases = {
      "",
      "- a\n- b\n",
      "current-context: c\ncontexts: 5\n",
      "current-context: c\ncontexts: [{name: c, context: 7}]\n",
      "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\nclusters: [{name: k, "
      "cluster: [1]}]\n",
      "current-context: [x]\n",
      "current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
      "clusters: [{name: k, cluster: {server: 'https://k'}}]\nusers: [{name: u, user: {token: "
      "[1], client-key-data: {a: b}}}]\n",
  };
  for (const auto& yaml : cases) {
    auto r = ParseKubeconfig(yaml, "k.yaml");
    ASSERT_FALSE(r.ok()) << yaml;
    EXPECT_EQ(r.error().code, codes::kKubeconfigInvalid) << yaml;
  }
}

TEST(Kubeconfig, InClusterServiceAccount) {
  rsl::testing::TempDir dir("sa");
  dir.Write("token", "sa-token\n");
  dir.Write("ca.crt", "SA-CA");
  dir.Write("namespace", "rsl-system\n");
  std::map<std::string, std::string> env = {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                            {"KUBERNETES_SERVICE_PORT", "443"}};
  auto c = InClusterConnection(env, dir.path());
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->server, "https://10.96.0.1:443");
  EXPECT_EQ(c->token, "sa-token");
  EXPECT_EQ(c->ca_pem, "SA-CA");
  EXPECT_EQ(c->namespace_, "rsl-system");
  env["KUBERNETES_SERVICE_HOST"] = "fd00::1";
  EXPECT_EQ(InClusterConnection(env, dir.path())->server, "https://[fd00::1]:443");

  auto missing = InClusterConnection({}, dir.path());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().ToString(),
            "KUBECONFIG_INVALID: no kubeconfig and not in a cluster (KUBERNETES_SERVICE_HOST/PORT "
            "unset) (set KUBECONFIG or pass --kubeconfig FILE)");
  auto no_token = InClusterConnection(env, dir.path() + "/nowhere");
  ASSERT_FALSE(no_token.ok());
  EXPECT_EQ(no_token.error().code, codes::kKubeconfigInvalid);
}

TEST(Kubeconfig, ResolveOrder) {
  rsl::testing::TempDir dir("resolve");
  std::string first = dir.Write("first", Config("    token: first\n"));
  std::string home_cfg = dir.Write("home/.kube/config", Config("    token: home\n"));
  auto c = ResolveConnection({{"KUBECONFIG", first + ":" + home_cfg}, {"HOME", dir / "home"}});
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->token, "first");
  EXPECT_EQ(c->source, first);
  c = ResolveConnection({{"HOME", dir / "home"}});
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->token, "home");
  c = ResolveConnection({{"HOME", dir / "home"}}, first, "prod");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->token, "bob-secret-token");
  // No kubeconfig anywhere and no cluster around: the in-cluster error.
  c = ResolveConnection({{"HOME", dir / "nohome"}}, "", "", dir / "nosa");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, codes::kKubeconfigInvalid);
  auto unreadable = ResolveConnection({{"KUBECONFIG", dir / "missing"}});
  ASSERT_FALSE(unreadable.ok());
  EXPECT_EQ(unreadable.error().code, codes::kIoError);
}

// KUBECONFIG as a list, merged as kubectl merges it: current-context from the first file that
// sets it, each name from the first file that defines it (relative paths from that file),
// missing files skipped, an empty file an empty configuration.
TEST(Kubeconfig, AListOfFilesIsMergedAsKubectlMergesIt) {
  rsl::testing::TempDir dir("kubeconfig-list");
  dir.Write("b/ca.crt", "B-CA");
  std::string empty = dir.Write("empty", "");
  // a: only the current context and a user that b defines too (a's wins).
  std::string a = dir.Write("a/config",
                            "current-context: dev\n"
                            "users: [{name: u, user: {token: token-from-a}}]\n");
  // b: the context, its cluster (CA relative to b), the same user (ignored) and another
  // current-context (ignored: a's comes first).
  std::string b = dir.Write("b/config",
                            "current-context: other\n"
                            "contexts: [{name: dev, context: {cluster: k, user: u, namespace: n}},"
                            " {name: other, context: {cluster: k, user: v}}]\n"
                            "clusters: [{name: k, cluster: {server: 'https://k:6443', "
                            "certificate-authority: ca.crt}}]\n"
                            "users: [{name: u, user: {token: token-from-b}}, "
                            "{name: v, user: {token: token-v}}]\n");
  std::string list = empty + ":" + dir / "missing" + ":" + a + "::" + b + ":" + a;
  EXPECT_EQ(KubeconfigFiles(list), (std::vector<std::string>{empty, dir / "missing", a, b}));
  auto c = ResolveConnection({{"KUBECONFIG", list}});
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->context, "dev");
  EXPECT_EQ(c->server, "https://k:6443");
  EXPECT_EQ(c->ca_pem, "B-CA");
  EXPECT_EQ(c->token, "token-from-a");
  EXPECT_EQ(c->namespace_, "n");
  EXPECT_EQ(c->source, b);  // where the context is
  // An explicit context; the same list given as --kubeconfig.
  c = ResolveConnection({}, a + ":" + b, "other");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->token, "token-v");
  // A context no file defines names the list; none of the files existing is IO_ERROR.
  c = ResolveConnection({{"KUBECONFIG", a + ":" + b}}, "", "nope");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, codes::kKubeconfigInvalid);
  EXPECT_NE(c.error().message.find("in any of the 2 files"), std::string::npos)
      << c.error().ToString();
  c = ResolveConnection({{"KUBECONFIG", dir / "x" + ":" + dir / "y"}});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, codes::kIoError);
  // A broken file in the list is its own error, at its place.
  std::string bad = dir.Write("bad", "users: [\n");
  c = ResolveConnection({{"KUBECONFIG", a + ":" + bad}});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().ToString().find(bad), std::string::npos) << c.error().ToString();
}

}  // namespace
}  // namespace rsl::k8s
