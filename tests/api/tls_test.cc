// rsl-controller over HTTPS with certificates made by openssl at test time: a good chain, a
// certificate for another host, an expired one, one of an unknown CA; seedctl names the host
// and the fingerprint it saw when it does not trust the server. Plain HTTP on an address
// other than loopback needs --insecure-listen.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "harness.h"

namespace rsl::apitest {
namespace {

namespace fs = std::filesystem;

class TlsTest : public ::testing::Test {
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
  }

  void Openssl(const std::string& args) {
    std::string cmd = "cd " + dir_ + " && openssl " + args + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }

  // A server certificate for `san`, valid for `days` (negative: expired), signed by `ca`.
  void Issue(const std::string& name, const std::string& san, int days,
             const std::string& ca = "ca") {
    WriteText(dir_ + "/" + name + ".ext", "subjectAltName=" + san + "\n");
    Openssl("req -newkey rsa:2048 -nodes -keyout " + name + ".key -out " + name +
            ".csr -subj /CN=rsl-controller");
    Openssl("x509 -req -in " + name + ".csr -CA " + ca + ".crt -CAkey " + ca +
            ".key -CAcreateserial -out " + name + ".crt -days " + std::to_string(days) +
            " -extfile " + name + ".ext");
  }

  std::string Fingerprint(const std::string& name) {
    std::string cmd = "openssl x509 -in " + dir_ + "/" + name + ".crt -noout -fingerprint -sha256";
    CmdResult r = RunCmd({"/bin/sh", "-c", cmd}, {});
    size_t eq = r.out.find('=');
    std::string fp = eq == std::string::npos ? "" : r.out.substr(eq + 1);
    while (!fp.empty() && (fp.back() == '\n' || fp.back() == '\r')) fp.pop_back();
    return fp;
  }

  void StartWith(const std::string& cert) {
    c_.UseArgs({"--tls-cert", dir_ + "/" + cert + ".crt", "--tls-key", dir_ + "/" + cert + ".key"});
    ASSERT_TRUE(c_.Start()) << c_.Log();
    token_ = c_.CreateToken("risk", "viewer", "vera");
  }

  CmdResult List(const std::string& ca_file) {
    std::vector<std::string> args = {"workload", "list"};
    if (!ca_file.empty()) {
      args.push_back("--certificate-authority");
      args.push_back(dir_ + "/" + ca_file);
    }
    return c_.Seedctl(token_, args);
  }

  Controller c_;
  std::string dir_;
  std::string token_;
};

TEST_F(TlsTest, AGoodChainIsTrustedAndTheFingerprintIsPrinted) {
  Issue("good", "DNS:localhost,IP:127.0.0.1", 2);
  StartWith("good");
  EXPECT_NE(c_.Log().find("listening on https://127.0.0.1:"), std::string::npos) << c_.Log();
  EXPECT_NE(c_.Log().find("TLS certificate SHA-256 fingerprint " + Fingerprint("good")),
            std::string::npos)
      << c_.Log() << Fingerprint("good");
  CmdResult r = List("ca.crt");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // The CA may come from the config file too.
  fs::create_directories(c_.work_dir() + "/../config/seedctl");
  WriteText(c_.work_dir() + "/../config/seedctl/config",
            "certificate-authority: " + dir_ + "/ca.crt\n");
  r = List("");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST_F(TlsTest, AnUnknownCaIsRefusedNamingTheHostAndTheFingerprint) {
  Issue("good", "DNS:localhost,IP:127.0.0.1", 2);
  StartWith("good");
  CmdResult r = List("other-ca.crt");
  EXPECT_NE(r.exit_code, 0);
  std::string port = c_.server().substr(c_.server().rfind(':') + 1);
  EXPECT_NE(r.err.find("TLS: the server localhost:" + port + " is not trusted: "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("SHA-256 fingerprint " + Fingerprint("good")), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("local issuer certificate"), std::string::npos) << r.err;
  EXPECT_EQ(r.LastErrLine(), "IO_ERROR");
  // No CA at all: the system's CAs do not know the test CA either.
  r = List("");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(Fingerprint("good")), std::string::npos) << r.err;
}

TEST_F(TlsTest, ACertificateForAnotherHostIsRefused) {
  Issue("elsewhere", "DNS:rsl.example.com", 2);
  StartWith("elsewhere");
  CmdResult r = List("ca.crt");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("hostname mismatch"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(Fingerprint("elsewhere")), std::string::npos) << r.err;
}

TEST_F(TlsTest, AnExpiredCertificateIsRefused) {
  Issue("expired", "DNS:localhost,IP:127.0.0.1", -1);
  StartWith("expired");
  CmdResult r = List("ca.crt");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("certificate has expired"), std::string::npos) << r.err;
}

// A CA file that is not there, or not a certificate, is named as such: not "cannot reach
// rsl-controller" with a hint to start it.
TEST_F(TlsTest, AMissingOrBrokenCaFileIsNamed) {
  Issue("good", "DNS:localhost,IP:127.0.0.1", 2);
  StartWith("good");
  CmdResult r = List("nope.crt");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("no such file \"" + dir_ + "/nope.crt\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--certificate-authority takes the PEM file"), std::string::npos) << r.err;
  EXPECT_EQ(r.LastErrLine(), "INVALID_ARGUMENT");
  WriteText(dir_ + "/garbage.crt", "not a certificate\n");
  r = List("garbage.crt");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("TLS: cannot load --certificate-authority " + dir_ + "/garbage.crt"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("cannot reach rsl-controller"), std::string::npos) << r.err;
  EXPECT_EQ(r.LastErrLine(), "INVALID_ARGUMENT");
}

TEST_F(TlsTest, ASelfSignedPairIsMadeOnceAndKeptAcrossRestarts) {
  c_.UseArgs({"--tls-self-signed"});
  ASSERT_TRUE(c_.Start()) << c_.Log();
  token_ = c_.CreateToken("risk", "viewer", "vera");
  const std::string crt = c_.state_dir() + "/tls.crt";
  CmdResult fp =
      RunCmd({"/usr/bin/openssl", "x509", "-in", crt, "-noout", "-fingerprint", "-sha256"}, {});
  ASSERT_NE(fp.out.find('='), std::string::npos) << fp.out << fp.err;
  std::string expected = fp.out.substr(fp.out.find('=') + 1);
  while (!expected.empty() && expected.back() == '\n') expected.pop_back();
  EXPECT_NE(c_.Log().find("TLS certificate SHA-256 fingerprint " + expected), std::string::npos)
      << c_.Log();
  struct stat st {};
  ASSERT_EQ(::stat((c_.state_dir() + "/tls.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  CmdResult r = c_.Seedctl(token_, {"workload", "list", "--certificate-authority", crt});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // Restarted: the same pair, the same fingerprint.
  EXPECT_EQ(c_.Terminate(), 0);
  ASSERT_TRUE(c_.Start()) << c_.Log();
  std::string log = c_.Log();
  EXPECT_NE(log.find("TLS certificate SHA-256 fingerprint " + expected, log.rfind("--- start")),
            std::string::npos)
      << log;
}

TEST_F(TlsTest, PlainHttpBeyondLoopbackNeedsInsecureListen) {
  CmdResult r =
      RunCmd({ControllerPath(), "--listen", "0.0.0.0:0", "--state-dir", c_.state_dir()}, {});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("plain HTTP on 0.0.0.0:0 would send bearer tokens and secret values in "
                       "clear"),
            std::string::npos)
      << r.err;
  CmdResult half = RunCmd({ControllerPath(), "--listen", "127.0.0.1:0", "--state-dir",
                           c_.state_dir(), "--tls-cert", dir_ + "/ca.crt"},
                          {});
  EXPECT_EQ(half.exit_code, 1);
  EXPECT_NE(half.err.find("--tls-cert and --tls-key go together"), std::string::npos) << half.err;
  Issue("good", "DNS:localhost", 2);
  CmdResult mismatch =
      RunCmd({ControllerPath(), "--listen", "127.0.0.1:0", "--state-dir", c_.state_dir(),
              "--tls-cert", dir_ + "/good.crt", "--tls-key", dir_ + "/ca.key"},
             {});
  EXPECT_EQ(mismatch.exit_code, 1);
  EXPECT_NE(mismatch.err.find("cannot load the TLS private key " + dir_ + "/ca.key"),
            std::string::npos)
      << mismatch.err;
}

}  // namespace
}  // namespace rsl::apitest
