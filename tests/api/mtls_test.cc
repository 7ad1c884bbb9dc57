// Mutual TLS against a real rsl-controller with certificates made by openssl at test time: a
// verified client certificate authenticates as its subject (CN) with the role its O entries
// name, under the same authorisation as tokens; a certificate of an unknown CA, an expired one,
// and none at all when one is required fail the TLS handshake, which seedctl explains and the
// audit log records.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace rsl::apitest {
namespace {

namespace fs = std::filesystem;

std::string OneStepYaml(const std::string& name, const std::string& ns) {
  return "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: " + name +
         "\n  namespace: " + ns +
         "\nspec:\n  resources: {cpu: \"1\", memory: 64Mi}\n  pipeline:\n"
         "    - name: only\n      command: [\"true\"]\n";
}

class MutualTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = c_.work_dir() + "/pki";
    fs::create_directories(dir_);
    Openssl(
        "req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj "
        "/CN=rsl-test-ca");
    Openssl(
        "req -x509 -newkey rsa:2048 -nodes -keyout other-ca.key -out other-ca.crt -days 2 "
        "-subj /CN=other-ca");
    // The server's certificate, from the same CA as the clients' (the clients trust it).
    WriteText(dir_ + "/server.ext", "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
    Openssl(
        "req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "
        "/CN=rsl-controller");
    Openssl(
        "x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt "
        "-days 2 -extfile server.ext");
    WriteText(c_.work_dir() + "/w.yaml", OneStepYaml("w", "risk"));
  }

  void Openssl(const std::string& args) {
    std::string cmd = "cd " + dir_ + " && openssl " + args + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }

  // A client certificate for `subject` (e.g. "/CN=vera/O=risk:viewer"), valid for `days`
  // (negative: expired), signed by `ca`.
  void Issue(const std::string& name, const std::string& subject, int days,
             const std::string& ca = "ca") {
    Openssl("req -newkey rsa:2048 -nodes -keyout " + name + ".key -out " + name + ".csr -subj " +
            subject);
    Openssl("x509 -req -in " + name + ".csr -CA " + ca + ".crt -CAkey " + ca +
            ".key -CAcreateserial -out " + name + ".crt -days " + std::to_string(days));
  }

  void StartServer(bool required) {
    std::vector<std::string> args = {"--tls-cert",         dir_ + "/server.crt", "--tls-key",
                                     dir_ + "/server.key", "--tls-client-ca",    dir_ + "/ca.crt"};
    if (required) args.push_back("--tls-require-client-cert");
    c_.UseArgs(args);
    ASSERT_TRUE(c_.Start()) << c_.Log();
    // Printed right after the listening line Start() waits for.
    const std::string line = std::string("client certificates ") +
                             (required ? "required" : "accepted") + ", verified against " + dir_ +
                             "/ca.crt";
    for (int i = 0; i < 100 && c_.Log().find(line) == std::string::npos; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_NE(c_.Log().find(line), std::string::npos) << c_.Log();
  }

  // seedctl with the CA and, unless `cert` is "", the client certificate `cert`.
  CmdResult As(const std::string& cert, std::vector<std::string> args,
               const std::string& token = "") {
    args.insert(args.end(), {"--certificate-authority", dir_ + "/ca.crt"});
    if (!cert.empty()) {
      args.insert(args.end(), {"--client-certificate", dir_ + "/" + cert + ".crt", "--client-key",
                               dir_ + "/" + cert + ".key"});
    }
    return c_.Seedctl(token, args);
  }

  // Certificate revocation lists of `ca` (openssl ca -gencrl) revoking `revoked` (certificate
  // names), written to `out` by a rename (a CA publishing a new list).
  void PublishCrl(const std::vector<std::string>& revoked, const std::string& out,
                  const std::string& ca = "ca") {
    const std::string db = ca + "-crl";
    fs::remove_all(dir_ + "/" + db);
    fs::create_directories(dir_ + "/" + db);
    WriteText(dir_ + "/" + db + "/index.txt", "");
    WriteText(dir_ + "/" + db + "/crlnumber", "01\n");
    WriteText(dir_ + "/" + db + "/ca.cnf", "[ca]\ndefault_ca = rsl\n[rsl]\ndatabase = " + dir_ +
                                               "/" + db + "/index.txt\ncrlnumber = " + dir_ + "/" +
                                               db +
                                               "/crlnumber\ndefault_md = sha256\n"
                                               "default_crl_days = 2\n");
    const std::string ca_args =
        "ca -config " + db + "/ca.cnf -keyfile " + ca + ".key -cert " + ca + ".crt ";
    for (const auto& name : revoked) Openssl(ca_args + "-revoke " + name + ".crt");
    Openssl(ca_args + "-gencrl -out " + out + ".tmp");
    fs::rename(dir_ + "/" + out + ".tmp", dir_ + "/" + out);
  }

  std::string Audit() {
    CmdResult r = As("root", {"audit"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }

  Controller c_;
  std::string dir_;
};

TEST_F(MutualTlsTest, ACertificateActsAsItsSubjectWithItsRole) {
  Issue("vera", "/CN=vera/O=Acme/O=risk:viewer", 2);
  Issue("eddie", "/CN=eddie/O=risk:editor", 2);
  Issue("root", "/CN=root/O=*:admin", 2);
  StartServer(/*required=*/false);

  CmdResult list = As("vera", {"workload", "list", "-n", "risk"});
  EXPECT_EQ(list.exit_code, 0) << list.out << list.err;
  // The same authorisation as tokens: a viewer cannot submit, nor read another namespace.
  CmdResult submit = As("vera", {"workload", "submit", "-f", "w.yaml"});
  EXPECT_EQ(submit.exit_code, 1);
  EXPECT_EQ(submit.LastErrLine(), "FORBIDDEN");
  EXPECT_NE(submit.err.find(
                "subject \"vera\" (role viewer) cannot submit workloads in namespace \"risk\""),
            std::string::npos)
      << submit.err;
  CmdResult other = As("vera", {"workload", "list", "-n", "ads"});
  EXPECT_EQ(other.LastErrLine(), "FORBIDDEN");
  CmdResult nodes = As("eddie", {"node", "list"});
  EXPECT_EQ(nodes.LastErrLine(), "FORBIDDEN");

  CmdResult edited = As("eddie", {"workload", "submit", "-f", "w.yaml"});
  ASSERT_EQ(edited.exit_code, 0) << edited.err;
  std::string id = IdFromSubmit(edited.out);
  ASSERT_FALSE(id.empty()) << edited.out;
  // Submitted by the certificate's subject.
  CmdResult wide = As("vera", {"workload", "list", "-n", "risk", "-o", "wide"});
  EXPECT_EQ(wide.exit_code, 0) << wide.err;
  std::string row = wide.out.substr(std::min(wide.out.find(id), wide.out.size()));
  row = row.substr(0, row.find('\n'));
  EXPECT_NE(row.find("eddie"), std::string::npos) << wide.out;
  // The audit log names the certificate's subject, and the admin certificate reads it all.
  std::string audit = Audit();
  EXPECT_NE(audit.find("eddie"), std::string::npos) << audit;

  // The client certificate may come from the config file too.
  fs::create_directories(c_.work_dir() + "/../config/seedctl");
  WriteText(c_.work_dir() + "/../config/seedctl/config",
            "certificate-authority: " + dir_ + "/ca.crt\nclient-certificate: " + dir_ +
                "/eddie.crt\nclient-key: " + dir_ + "/eddie.key\n");
  CmdResult from_config = c_.Seedctl("", {"workload", "list", "-n", "risk"});
  EXPECT_EQ(from_config.exit_code, 0) << from_config.err;
  EXPECT_NE(from_config.out.find(id), std::string::npos) << from_config.out;

  // Without a certificate (not required here), a bearer token still works.
  std::string token = c_.CreateToken("risk", "viewer", "tina");
  fs::remove(c_.work_dir() + "/../config/seedctl/config");
  CmdResult by_token = As("", {"workload", "list", "-n", "risk"}, token);
  EXPECT_EQ(by_token.exit_code, 0) << by_token.err;
  CmdResult anonymous = As("", {"workload", "list", "-n", "risk"});
  EXPECT_EQ(anonymous.LastErrLine(), "UNAUTHENTICATED");
}

TEST_F(MutualTlsTest, ASubjectWithoutARoleIs401) {
  Issue("nobody", "/CN=nobody/O=Acme", 2);
  Issue("root", "/CN=root/O=*:admin", 2);
  StartServer(/*required=*/false);
  CmdResult r = As("nobody", {"workload", "list", "-n", "risk"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.LastErrLine(), "UNAUTHENTICATED");
  EXPECT_NE(r.err.find("client certificate CN=\"nobody\" names no namespace role"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("O=<namespace>:<role>"), std::string::npos) << r.err;
  std::string audit = Audit();
  EXPECT_NE(audit.find("client certificate"), std::string::npos) << audit;
}

TEST_F(MutualTlsTest, ACertificateOfAnUnknownCaFailsTheHandshake) {
  Issue("stranger", "/CN=stranger/O=risk:editor", 2, "other-ca");
  Issue("root", "/CN=root/O=*:admin", 2);
  StartServer(/*required=*/false);
  CmdResult r = As("stranger", {"workload", "list", "-n", "risk"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.LastErrLine(), "UNAUTHENTICATED");
  std::string port = std::to_string(c_.port());
  EXPECT_NE(r.err.find("TLS: the server localhost:" + port + " refused the client certificate " +
                       dir_ + "/stranger.crt: unknown ca"),
            std::string::npos)
      << r.err;
  // A bearer token does not rescue a bad certificate: the handshake fails before any request.
  std::string token = c_.CreateToken("risk", "viewer", "tina");
  CmdResult with_token = As("stranger", {"workload", "list", "-n", "risk"}, token);
  EXPECT_EQ(with_token.LastErrLine(), "UNAUTHENTICATED");
  std::string audit = Audit();
  EXPECT_NE(audit.find("refused: client certificate refused: unable to get local issuer "
                       "certificate"),
            std::string::npos)
      << audit;
  EXPECT_NE(audit.find("/CN=stranger/O=risk:editor, SHA-256 "), std::string::npos) << audit;
}

TEST_F(MutualTlsTest, AnExpiredCertificateFailsTheHandshake) {
  Issue("late", "/CN=late/O=risk:editor", -1);
  Issue("root", "/CN=root/O=*:admin", 2);
  StartServer(/*required=*/false);
  CmdResult r = As("late", {"workload", "list", "-n", "risk"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.LastErrLine(), "UNAUTHENTICATED");
  EXPECT_NE(r.err.find("refused the client certificate " + dir_ + "/late.crt: certificate expired"),
            std::string::npos)
      << r.err;
  std::string audit = Audit();
  EXPECT_NE(audit.find("certificate has expired"), std::string::npos) << audit;
}

TEST_F(MutualTlsTest, NoCertificateWhenOneIsRequiredFailsTheHandshake) {
  Issue("vera", "/CN=vera/O=risk:viewer", 2);
  Issue("root", "/CN=root/O=*:admin", 2);
  StartServer(/*required=*/true);
  std::string token = c_.CreateToken("risk", "viewer", "tina");
  CmdResult r = As("", {"workload", "list", "-n", "risk"}, token);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.LastErrLine(), "UNAUTHENTICATED");
  EXPECT_NE(r.err.find("requires a client certificate"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--client-certificate FILE --client-key FILE"), std::string::npos) << r.err;
  CmdResult ok = As("vera", {"workload", "list", "-n", "risk"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  std::string audit = Audit();
  EXPECT_NE(audit.find("no client certificate (one is required)"), std::string::npos) << audit;
}

TEST_F(MutualTlsTest, ARevokedCertificateFailsTheHandshakeAndANewListTakesEffectLive) {
  Issue("alice", "/CN=alice/O=risk:viewer", 2);
  Issue("mallory", "/CN=mallory/O=risk:editor", 2);
  Issue("root", "/CN=root/O=*:admin", 2);
  PublishCrl({"mallory"}, "ca.crl");
  c_.UseArgs({"--tls-cert", dir_ + "/server.crt", "--tls-key", dir_ + "/server.key",
              "--tls-client-ca", dir_ + "/ca.crt", "--tls-client-crl", dir_ + "/ca.crl"});
  ASSERT_TRUE(c_.Start()) << c_.Log();

  CmdResult good = As("alice", {"workload", "list", "-n", "risk"});
  EXPECT_EQ(good.exit_code, 0) << good.err;
  CmdResult revoked = As("mallory", {"workload", "list", "-n", "risk"});
  EXPECT_EQ(revoked.exit_code, 1);
  EXPECT_EQ(revoked.LastErrLine(), "UNAUTHENTICATED");
  EXPECT_NE(revoked.err.find("refused the client certificate " + dir_ +
                             "/mallory.crt: certificate revoked"),
            std::string::npos)
      << revoked.err;
  EXPECT_NE(revoked.err.find("--tls-client-crl"), std::string::npos) << revoked.err;
  std::string audit = Audit();
  EXPECT_NE(audit.find("client certificate refused: certificate revoked (/CN=mallory"),
            std::string::npos)
      << audit;

  // The CA revokes alice too and publishes a new list: it applies without a restart.
  PublishCrl({"mallory", "alice"}, "ca.crl");
  bool refused = false;
  for (int i = 0; i < 100 && !refused; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    refused = As("alice", {"workload", "list", "-n", "risk"}).exit_code != 0;
  }
  EXPECT_TRUE(refused) << c_.Log();
  EXPECT_NE(c_.Log().find("--tls-client-crl " + dir_ + "/ca.crl: reloaded, 1 list(s)"),
            std::string::npos)
      << c_.Log();
  // A broken new list keeps the last good one in force (alice stays out, root stays in).
  WriteText(dir_ + "/ca.crl", "-----BEGIN X509 CRL-----\nnot base64\n-----END X509 CRL-----\n");
  for (int i = 0;
       i < 100 && c_.Log().find("kept the previous revocation lists") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    (void)As("root", {"workload", "list", "-n", "risk"});
  }
  EXPECT_NE(c_.Log().find("kept the previous revocation lists"), std::string::npos) << c_.Log();
  EXPECT_EQ(As("root", {"workload", "list", "-n", "risk"}).exit_code, 0);
  EXPECT_EQ(As("alice", {"workload", "list", "-n", "risk"}).LastErrLine(), "UNAUTHENTICATED");
}

TEST_F(MutualTlsTest, ACaWithoutARevocationListFailsClosed) {
  Issue("alice", "/CN=alice/O=risk:viewer", 2);
  // Lists of another CA only: nothing says whether alice's certificate is revoked.
  PublishCrl({}, "other.crl", "other-ca");
  c_.UseArgs({"--tls-cert", dir_ + "/server.crt", "--tls-key", dir_ + "/server.key",
              "--tls-client-ca", dir_ + "/ca.crt", "--tls-client-crl", dir_ + "/other.crl"});
  ASSERT_TRUE(c_.Start()) << c_.Log();
  CmdResult r = As("alice", {"workload", "list", "-n", "risk"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.LastErrLine(), "UNAUTHENTICATED") << r.err;
  EXPECT_NE(r.err.find("refused the client certificate " + dir_ + "/alice.crt"), std::string::npos)
      << r.err;
  Issue("root", "/CN=root/O=*:admin", 2);
  CmdResult root = As("root", {"audit"});
  EXPECT_EQ(root.exit_code, 1);  // root's CA has no list either: nobody gets in
  EXPECT_NE(c_.Log().find("listening"), std::string::npos);
}

TEST_F(MutualTlsTest, BadFlagsAreClearErrors) {
  CmdResult no_tls = RunCmd({ControllerPath(), "--listen", "127.0.0.1:0", "--state-dir",
                             c_.state_dir(), "--tls-client-ca", dir_ + "/ca.crt"},
                            {});
  EXPECT_EQ(no_tls.exit_code, 1);
  EXPECT_NE(no_tls.err.find("--tls-client-ca needs TLS"), std::string::npos) << no_tls.err;
  CmdResult missing = RunCmd({ControllerPath(), "--listen", "127.0.0.1:0", "--state-dir",
                              c_.state_dir(), "--tls-cert", dir_ + "/server.crt", "--tls-key",
                              dir_ + "/server.key", "--tls-client-ca", dir_ + "/nope.crt"},
                             {});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("cannot load the client CA file " + dir_ + "/nope.crt: no such file"),
            std::string::npos)
      << missing.err;
  CmdResult no_crl =
      RunCmd({ControllerPath(), "--listen", "127.0.0.1:0", "--state-dir", c_.state_dir(),
              "--tls-cert", dir_ + "/server.crt", "--tls-key", dir_ + "/server.key",
              "--tls-client-ca", dir_ + "/ca.crt", "--tls-client-crl", dir_ + "/ca.crt"},
             {});
  EXPECT_EQ(no_crl.exit_code, 1);
  EXPECT_NE(no_crl.err.find("cannot load the certificate revocation lists " + dir_ +
                            "/ca.crt: no certificate revocation list in it"),
            std::string::npos)
      << no_crl.err;
  CmdResult half = c_.Seedctl("", {"workload", "list", "--client-certificate", dir_ + "/ca.crt"});
  EXPECT_EQ(half.exit_code, 1);
  EXPECT_NE(half.err.find("a client certificate and its key go together"), std::string::npos)
      << half.err;
}

}  // namespace
}  // namespace rsl::apitest
