// `rsl-controller detect` on machines made by the test: a HOME, a HADOOP_CONF_DIR, a PATH with
// stand-in Slurm clients (shell scripts answering as the real ones do) or with none. Each
// output is read back by the controller's own config parser, as `--config` would.
#include "cli/detect.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "base/file.h"
#include "base/test_util.h"
#include "cli/controller_config.h"

namespace rsl::cli {
namespace {

class DetectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    in_.env = Env::Default();
    in_.vars = {{"HOME", dir_ / "home"}, {"PATH", dir_ / "bin"}};
    in_.service_account_dir = dir_ / "serviceaccount";
    in_.hadoop_default_dir = dir_ / "etc-hadoop";
    in_.state_dir = "/var/lib/rsl";
    in_.command_timeout_ms = 60000;  // shell scripts on a loaded machine
    dir_.Write("bin/.keep", "");
    dir_.Write("home/.keep", "");
  }

  // An executable script at bin/NAME.
  void Script(const std::string& name, const std::string& body) {
    std::string path = dir_.Write("bin/" + name, "#!/bin/sh\n" + body);
    ASSERT_EQ(Env::Default()->Chmod(path, 0755).ok(), true);
  }

  // Slurm clients that answer like a two-node cluster "rsl" whose default partition is debug.
  void AnsweringSlurm() {
    Script("scontrol",
           "case \"$1\" in\n"
           "  ping) echo 'Slurmctld(primary) at head is UP' ;;\n"
           "  show) printf 'Configuration data as of 2026-12-03T11:00:00\\n"
           "ClusterName             = rsl\\nSlurmctldPort           = 6817\\n' ;;\n"
           "esac\n");
    Script("sinfo",
           "[ \"$*\" = '-h -N -o %N|%P|%f|%G' ] || { echo \"unexpected: $*\" >&2; exit 2; }\n"
           "echo 'n1|debug*|a10,tensor_core|gpu:a10:2'\n"
           "echo 'n1|long|a10,tensor_core|gpu:a10:2'\n"
           "echo 'n2|debug*|(null)|(null)'\n");
  }

  // The YAML of Detect, and the flags the controller's --config parser makes of it.
  std::string DetectYaml(ControllerFlags* f) {
    Detection d = Detect(in_);
    last_ = d;
    std::string yaml = DetectionYaml(d, in_);
    std::string file = dir_.Write("controller.yaml", yaml);
    Status st = LoadControllerConfig(file, f);
    EXPECT_TRUE(st.ok()) << st.ToString() << "\n" << yaml;
    st = CheckControllerFlags(*f);
    EXPECT_TRUE(st.ok()) << st.ToString() << "\n" << yaml;
    return yaml;
  }

  static bool Has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  }

  rsl::testing::TempDir dir_{"detect"};
  DetectInput in_;
  Detection last_;
};

TEST_F(DetectTest, NothingFoundIsTheLocalBackend) {
  ControllerFlags f;
  std::string yaml = DetectYaml(&f);
  const std::string home = dir_ / "home";
  EXPECT_EQ(yaml,
            "# rsl-controller configuration, as `rsl-controller detect` found the machine.\n"
            "# Save it as the file of `rsl-controller --config FILE` (docs/controller-config.md).\n"
            "#\n"
            "# Slurm: not used: scontrol not found on PATH\n"
            "# Kubernetes: not used: no kubeconfig and no in-cluster service account (looked at "
            "~/.kube/config, " +
                dir_ / "serviceaccount" +
                ")\n"
                "# S3: nothing found (AWS_ENDPOINT_URL, ~/.aws/config, ~/.aws/credentials)\n"
                "# HDFS: no Hadoop configuration (" +
                dir_ / "etc-hadoop" +
                ", HADOOP_CONF_DIR unset)\n"
                "#\n"
                "# backend local: no Slurm answers and no Kubernetes context\n"
                "listen: \"127.0.0.1:7070\"\n"
                "stateDir: \"/var/lib/rsl\"\n"
                "backend: \"local\"\n");
  EXPECT_EQ(f.runtime.backend, "local");
  EXPECT_EQ(f.runtime.state_dir, "/var/lib/rsl");
  EXPECT_EQ(f.listen, "127.0.0.1:7070");
  EXPECT_TRUE(last_.warnings.empty());
}

TEST_F(DetectTest, AnsweringSlurmIsTheSlurmBackendWithItsDefaultPartition) {
  AnsweringSlurm();
  in_.vars["SLURM_CONF"] = "/etc/slurm/slurm.conf";
  ControllerFlags f;
  std::string yaml = DetectYaml(&f);
  EXPECT_TRUE(Has(yaml, "# Slurm: slurmctld answers (" + dir_ / "bin/scontrol" +
                            " ping), SLURM_CONF=/etc/slurm/slurm.conf\n"
                            "#   cluster rsl, 2 nodes, partitions debug, long (default debug)\n"
                            "#   features: a10, tensor_core\n"
                            "#   GRES: gpu:a10:2 (1 node)\n"))
      << yaml;
  EXPECT_TRUE(Has(yaml, "# backend slurm: slurmctld answers\n")) << yaml;
  EXPECT_EQ(f.runtime.backend, "slurm");
  EXPECT_EQ(f.runtime.backend_options.slurm_partition, "debug");
  EXPECT_EQ(f.runtime.backend_options.slurm_conf, "/etc/slurm/slurm.conf");
  EXPECT_EQ(last_.slurm.cluster, "rsl");
  EXPECT_EQ(last_.slurm.nodes, 2);
}

TEST_F(DetectTest, SlurmThatDoesNotAnswerIsSaidSo) {
  // As Slurm 22.05 says it.
  Script("scontrol",
         "echo 'Slurmctld(primary) at head is DOWN'\n"
         "echo '*****************************************'\n"
         "echo '** RESTORE SLURMCTLD DAEMON TO SERVICE **'\n"
         "echo '*****************************************'\nexit 1\n");
  Script("sinfo", "exit 1\n");
  ControllerFlags f;
  std::string yaml = DetectYaml(&f);
  EXPECT_TRUE(Has(yaml, "# Slurm: not used: scontrol ping: Slurmctld(primary) at head is DOWN\n"))
      << yaml;
  EXPECT_EQ(f.runtime.backend, "local");

  // A client without a configuration logs its attempts; the last line says what gave up.
  Script("scontrol",
         "echo 'scontrol: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host' >&2\n"
         "echo 'scontrol: error: fetch_config: DNS SRV lookup failed' >&2\n"
         "echo 'scontrol: fatal: Could not establish a configuration source' >&2\nexit 1\n");
  EXPECT_EQ(Detect(in_).slurm.error,
            "scontrol ping: scontrol: fatal: Could not establish a configuration source");
}

TEST_F(DetectTest, SlurmThatHangsIsCutShort) {
  // The test's PATH is bin/ alone: sleep by its full path.
  const std::string sleep = FindInPath("sleep");
  ASSERT_FALSE(sleep.empty());
  Script("scontrol", "exec " + sleep + " 30\n");
  Script("sinfo", "exit 0\n");
  in_.command_timeout_ms = 300;
  Detection d = Detect(in_);
  EXPECT_FALSE(d.slurm.answering);
  EXPECT_EQ(d.slurm.error, "scontrol ping: scontrol ping did not answer within 300 ms");
}

const char kKubeconfig[] =
    "apiVersion: v1\n"
    "kind: Config\n"
    "current-context: dev\n"
    "clusters:\n"
    "- name: kind\n"
    "  cluster: {server: \"https://10.1.2.3:6443\", insecure-skip-tls-verify: true}\n"
    "contexts:\n"
    "- name: dev\n"
    "  context: {cluster: kind, user: alice, namespace: risk}\n"
    "users:\n"
    "- name: alice\n"
    "  user: {token: alice-secret-token}\n";

TEST_F(DetectTest, KubeconfigWithACurrentContextIsTheK8sBackend) {
  std::string path = dir_.Write("home/.kube/config", kKubeconfig);
  ControllerFlags f;
  std::string yaml = DetectYaml(&f);
  EXPECT_TRUE(Has(yaml,
                  "# Kubernetes: kubeconfig ~/.kube/config, context dev\n"
                  "#   server https://10.1.2.3:6443, namespace risk\n"
                  "#   https://10.1.2.3:6443 (context dev, bearer token, TLS NOT VERIFIED, "
                  "namespace risk, from " +
                      path +
                      ")\n"
                      "#   reachability: not checked (detect does not contact the API server)\n"))
      << yaml;
  EXPECT_FALSE(Has(yaml, "alice-secret-token")) << yaml;
  EXPECT_EQ(f.runtime.backend, "k8s");
  EXPECT_EQ(f.runtime.backend_options.kubeconfig, path);
  EXPECT_EQ(f.runtime.backend_options.kube_context, "dev");
  // Slurm answering wins over Kubernetes.
  AnsweringSlurm();
  EXPECT_EQ(Detect(in_).backend, "slurm");
}

TEST_F(DetectTest, KubeconfigVariableComesFirst) {
  // KUBECONFIG's files are merged as kubectl merges them: the first current-context wins, and
  // the config file gets the list of the files that exist.
  std::string home =
      dir_.Write("home/.kube/config",
                 "current-context: other\n"
                 "contexts: [{name: other, context: {cluster: kind, user: alice}}]\n");
  std::string path = dir_.Write("k/first", kKubeconfig);
  in_.vars["KUBECONFIG"] = path + ":" + dir_ / "k/missing" + ":" + home;
  ControllerFlags f;
  DetectYaml(&f);
  EXPECT_EQ(f.runtime.backend_options.kubeconfig, path + ":" + home);
  EXPECT_EQ(last_.kube.context, "dev");
  EXPECT_TRUE(last_.warnings.empty());
  // A broken file of the list is the list's error, at its place.
  dir_.Write("home/.kube/config", "not: [a kubeconfig");
  Detection broken = Detect(in_);
  EXPECT_NE(broken.kube.error.find(home), std::string::npos) << broken.kube.error;

  // A relative one is from the directory detect runs in, and written absolute (the config
  // file takes relative paths from its own directory).
  in_.cwd = dir_.path();
  in_.vars["KUBECONFIG"] = "k/first";
  ControllerFlags g;
  DetectYaml(&g);
  EXPECT_EQ(g.runtime.backend_options.kubeconfig, path);

  in_.vars["KUBECONFIG"] = dir_ / "k/missing";
  Detection d = Detect(in_);
  EXPECT_EQ(d.backend, "local");
  EXPECT_EQ(d.kube.error, "KUBECONFIG names " + dir_ / "k/missing" + ", which does not exist");
  in_.vars["KUBECONFIG"] = dir_ / "k/missing" + ":" + dir_ / "k/gone";
  EXPECT_EQ(Detect(in_).kube.error, "KUBECONFIG names " + dir_ / "k/missing" + ", " +
                                        dir_ / "k/gone" + ", none of which exists");
}

TEST_F(DetectTest, BrokenKubeconfigIsAWarningWithItsPlace) {
  std::string path = dir_.Write("home/.kube/config", "apiVersion: v1\nclusters: [\n  - name: x\n");
  ControllerFlags f;
  std::string yaml = DetectYaml(&f);
  EXPECT_EQ(f.runtime.backend, "local");
  ASSERT_EQ(last_.warnings.size(), 1u);
  EXPECT_EQ(last_.warnings[0].pos.file, path);
  EXPECT_GT(last_.warnings[0].pos.line, 0);
  EXPECT_TRUE(Has(yaml, "# Kubernetes: not used: " + path + ":")) << yaml;
  EXPECT_TRUE(Has(yaml, "# warning: " + path + ":")) << yaml;

  // No current context: not usable either, and said so.
  dir_.Write("home/.kube/config", "apiVersion: v1\nkind: Config\nclusters: []\n");
  Detection d = Detect(in_);
  EXPECT_EQ(d.backend, "local");
  EXPECT_FALSE(d.kube.error.empty());
}

TEST_F(DetectTest, InClusterServiceAccount) {
  dir_.Write("serviceaccount/token", "sa-secret-token\n");
  dir_.Write("serviceaccount/ca.crt", "SA-CA");
  dir_.Write("serviceaccount/namespace", "rsl-system\n");
  in_.vars["KUBERNETES_SERVICE_HOST"] = "10.96.0.1";
  in_.vars["KUBERNETES_SERVICE_PORT"] = "443";
  ControllerFlags f;
  std::string yaml = DetectYaml(&f);
  EXPECT_TRUE(Has(yaml, "# Kubernetes: in-cluster service account " + dir_ / "serviceaccount" +
                            ", context in-cluster\n#   server https://10.96.0.1:443, namespace "
                            "rsl-system\n"))
      << yaml;
  EXPECT_FALSE(Has(yaml, "sa-secret-token")) << yaml;
  EXPECT_EQ(f.runtime.backend, "k8s");
  EXPECT_EQ(f.runtime.backend_options.kubeconfig, "");  // the default finds the service account
}

TEST_F(DetectTest, S3ProfilesAndEndpointWithoutTheirKeys) {
  in_.vars["AWS_ENDPOINT_URL"] = "http://127.0.0.1:9000";
  dir_.Write("home/.aws/config",
             "[default]\nregion = us-east-1\n[profile minio]\nregion = eu-west-1\n"
             "s3 =\n  endpoint_url = http://minio.local:9000\n");
  dir_.Write("home/.aws/credentials",
             "[default]\naws_access_key_id = AKIADEFAULTKEY\naws_secret_access_key = "
             "default-secret-value\n[minio]\naws_access_key_id=minioadmin-id\n"
             "aws_secret_access_key=minio-secret-value\n");
  ControllerFlags f;
  std::string yaml = DetectYaml(&f);
  EXPECT_TRUE(Has(yaml,
                  "# S3: endpoint http://127.0.0.1:9000 from $AWS_ENDPOINT_URL\n"
                  "# S3: profile default, region us-east-1, credentials found in "
                  "~/.aws/credentials [default]\n"
                  "# S3: profile minio, endpoint http://minio.local:9000, region eu-west-1, "
                  "credentials found in ~/.aws/credentials [minio]\n"))
      << yaml;
  EXPECT_TRUE(Has(yaml,
                  "# Datasources are kept in seedctl's catalog (docs/data.md), not in this file:\n"
                  "#   seedctl datasource register s3 --name default --endpoint "
                  "http://127.0.0.1:9000 --region us-east-1 --access-key KEY --secret-key SECRET"
                  "  # keys: ~/.aws/credentials [default]\n"
                  "#   seedctl datasource register s3 --name minio --endpoint "
                  "http://minio.local:9000 --region eu-west-1 --access-key KEY --secret-key "
                  "SECRET  # keys: ~/.aws/credentials [minio]\n"))
      << yaml;
  std::string json = DetectionJson(last_, in_);
  for (const std::string& out : {yaml, json}) {
    for (const char* secret :
         {"AKIADEFAULTKEY", "default-secret-value", "minioadmin-id", "minio-secret-value"}) {
      EXPECT_FALSE(Has(out, secret)) << secret << " in\n" << out;
    }
  }
  EXPECT_EQ(f.runtime.backend, "local");
}

TEST_F(DetectTest, BrokenAwsFileIsAWarning) {
  std::string path = dir_.Write("home/.aws/credentials", "[default]\nAKIA-pasted-secret\n");
  Detection d = Detect(in_);
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_EQ(d.warnings[0].ToString(),
            path +
                ":2:1: CONFIG_INVALID: not a [section] or a key = value line (AWS config "
                "lines read key = value)");
  EXPECT_FALSE(Has(DetectionYaml(d, in_), "AKIA-pasted-secret"));
}

std::string Site(const std::string& props) {
  return "<?xml version=\"1.0\"?>\n<configuration>\n" + props + "</configuration>\n";
}

std::string Prop(const std::string& name, const std::string& value) {
  return "  <property><name>" + name + "</name><value>" + value + "</value></property>\n";
}

TEST_F(DetectTest, HdfsHaWithKerberosAndYarn) {
  in_.vars["HADOOP_CONF_DIR"] = dir_ / "hadoop";
  dir_.Write("hadoop/core-site.xml", Site(Prop("fs.defaultFS", "hdfs://ns1") +
                                          Prop("hadoop.security.authentication", "kerberos")));
  dir_.Write("hadoop/hdfs-site.xml",
             Site(Prop("dfs.nameservices", "ns1") + Prop("dfs.ha.namenodes.ns1", "nn1,nn2") +
                  Prop("dfs.namenode.rpc-address.ns1.nn1", "m1.example.com:8020") +
                  Prop("dfs.namenode.rpc-address.ns1.nn2", "m2.example.com:8020") +
                  Prop("dfs.namenode.http-address.ns1.nn1", "m1.example.com:9870") +
                  Prop("dfs.namenode.http-address.ns1.nn2", "0.0.0.0:50070")));
  dir_.Write("hadoop/yarn-site.xml",
             Site(Prop("yarn.resourcemanager.address", "rm1.example.com:8032")));
  ControllerFlags f;
  std::string yaml = DetectYaml(&f);
  const std::string conf = dir_ / "hadoop";
  EXPECT_TRUE(Has(yaml, "# HDFS: " + conf + " (" + conf + "/core-site.xml, " + conf +
                            "/hdfs-site.xml, " + conf +
                            "/yarn-site.xml)\n"
                            "#   fs.defaultFS hdfs://ns1\n"
                            "#   namenodes m1.example.com:8020, m2.example.com:8020 (HA "
                            "nameservice ns1)\n"
                            "#   WebHDFS http://m1.example.com:9870/webhdfs/v1, "
                            "http://m2.example.com:50070/webhdfs/v1\n"
                            "#   Kerberos: hadoop.security.authentication=kerberos (found; RSL "
                            "does not get tickets: kinit as the controller's user)\n"
                            "# YARN: resource manager rm1.example.com:8032 (found; RSL has no "
                            "YARN backend)\n"))
      << yaml;
  EXPECT_TRUE(Has(yaml,
                  "#   seedctl datasource register hdfs --name ns1 --namenodes "
                  "m1.example.com:8020,m2.example.com:8020 --webhdfs-url "
                  "http://m1.example.com:9870,http://m2.example.com:50070 --kerberos\n"))
      << yaml;
  EXPECT_EQ(f.runtime.backend, "local");
}

TEST_F(DetectTest, HdfsSingleNamenodeOverHttps) {
  dir_.Write("etc-hadoop/core-site.xml", Site(Prop("fs.defaultFS", "hdfs://nn.local:9000/")));
  dir_.Write("etc-hadoop/hdfs-site.xml", Site(Prop("dfs.http.policy", "HTTPS_ONLY")));
  Detection d = Detect(in_);
  EXPECT_EQ(d.hadoop.conf_dir, dir_ / "etc-hadoop");
  EXPECT_EQ(d.hadoop.nameservice, "nn.local");
  EXPECT_EQ(d.hadoop.namenodes, std::vector<std::string>{"nn.local:9000"});
  EXPECT_EQ(d.hadoop.webhdfs, std::vector<std::string>{"https://nn.local:9871"});
  EXPECT_FALSE(d.hadoop.kerberos);
  EXPECT_TRUE(Has(DetectionYaml(d, in_), "# YARN: no yarn.resourcemanager.address\n"));
}

TEST_F(DetectTest, MalformedSiteFileIsAWarningWithItsPlace) {
  std::string core =
      dir_.Write("etc-hadoop/core-site.xml", Site(Prop("fs.defaultFS", "hdfs://nn.local:8020")));
  std::string hdfs =
      dir_.Write("etc-hadoop/hdfs-site.xml", "<configuration>\n<property><name>x</name>\n");
  ControllerFlags f;
  std::string yaml = DetectYaml(&f);
  ASSERT_EQ(last_.warnings.size(), 1u);
  EXPECT_EQ(last_.warnings[0].ToString(),
            hdfs +
                ":3:1: CONFIG_INVALID: malformed XML: no element found (fix or remove the "
                "file; Hadoop would not read it either)");
  EXPECT_TRUE(Has(yaml, "# warning: " + hdfs + ":3:1: CONFIG_INVALID")) << yaml;
  // What the good file says is still used.
  EXPECT_EQ(last_.hadoop.namenodes, std::vector<std::string>{"nn.local:8020"});
  (void)core;
}

TEST_F(DetectTest, HadoopConfDirThatIsNotThereIsAWarning) {
  in_.vars["HADOOP_CONF_DIR"] = dir_ / "nowhere";
  Detection d = Detect(in_);
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_EQ(d.warnings[0].ToString(),
            "NOT_FOUND: HADOOP_CONF_DIR is not a directory (point it at the directory of "
            "core-site.xml)");
  EXPECT_EQ(d.warnings[0].value, dir_ / "nowhere");
}

// Values from other systems' files cannot add keys to the config: a newline or a quote in
// them stays inside a comment or a quoted scalar.
TEST_F(DetectTest, HostileValuesStayInsideCommentsAndScalars) {
  dir_.Write("etc-hadoop/core-site.xml",
             Site(Prop("fs.defaultFS", "hdfs://nn:8020&#10;backend: k8s&#10;tlsCert: /x")));
  in_.state_dir = "/var/lib/rsl \"quoted\"\nbackend: k8s";
  ControllerFlags f;
  std::string yaml = DetectYaml(&f);
  EXPECT_EQ(f.runtime.backend, "local") << yaml;
  EXPECT_EQ(f.tls_cert, "") << yaml;
  EXPECT_EQ(f.runtime.state_dir, in_.state_dir);
}

// Every truncation of good files (a kubeconfig, a site file, an AWS file): detect never
// crashes, and its output is still a config the controller accepts.
TEST_F(DetectTest, TruncatedFilesNeverBreakTheOutput) {
  const std::string hdfs =
      Site(Prop("dfs.nameservices", "ns1") + Prop("dfs.ha.namenodes.ns1", "a,b") +
           Prop("dfs.namenode.rpc-address.ns1.a", "h1:8020"));
  const std::string aws = "[default]\nregion = r\naws_access_key_id = AKIATRUNC\n";
  const std::string kube = kKubeconfig;
  for (size_t n = 0; n < kube.size(); n += 7) {
    dir_.Write("home/.kube/config", kube.substr(0, n));
    dir_.Write("etc-hadoop/hdfs-site.xml", hdfs.substr(0, n % (hdfs.size() + 1)));
    dir_.Write("home/.aws/config", aws.substr(0, n % (aws.size() + 1)));
    Detection d = Detect(in_);
    std::string yaml = DetectionYaml(d, in_);
    ControllerFlags f;
    Status st = ParseControllerConfig(yaml, dir_ / "c.yaml", &f);
    ASSERT_TRUE(st.ok()) << n << ": " << st.ToString() << "\n" << yaml;
    EXPECT_FALSE(Has(yaml, "alice-secret-token")) << n;
    EXPECT_FALSE(Has(yaml, "AKIATRUNC")) << n;
    EXPECT_FALSE(nlohmann::json::parse(DetectionJson(d, in_), nullptr, false).is_discarded());
  }
}

// Random bytes in every file detect reads (a fixed seed: the same bytes on every run).
TEST_F(DetectTest, GarbageFilesAreWarningsNeverACrash) {
  std::mt19937 rng(20261203);
  auto garbage = [&rng](size_t n) {
    std::string s(n, '\0');
    for (auto& c : s) c = static_cast<char>(rng() % 256);
    return s;
  };
  in_.vars["KUBECONFIG"] = dir_ / "kubeconfig";
  for (int round = 0; round < 40; ++round) {
    const size_t n = 1 + rng() % 400;
    dir_.Write("kubeconfig", garbage(n));
    dir_.Write("etc-hadoop/core-site.xml", garbage(n));
    dir_.Write("etc-hadoop/hdfs-site.xml", "<configuration>" + garbage(n));
    dir_.Write("home/.aws/config", "[default]\n" + garbage(n));
    dir_.Write("home/.aws/credentials", garbage(n));
    Detection d = Detect(in_);
    EXPECT_EQ(d.backend, "local") << round;
    EXPECT_GE(d.warnings.size(), 2u) << round;  // at least the two site files
    for (const auto& w : d.warnings) {
      EXPECT_FALSE(w.pos.file.empty()) << round << ": " << w.ToString();
      // The site and AWS files' parsers always know the line; the kubeconfig's says "the
      // document" when the whole of it is not a mapping.
      if (w.code == "CONFIG_INVALID") {
        EXPECT_GT(w.pos.line, 0) << round << ": " << w.ToString();
      }
    }
    ControllerFlags f;
    Status st = ParseControllerConfig(DetectionYaml(d, in_), dir_ / "c.yaml", &f);
    ASSERT_TRUE(st.ok()) << round << ": " << st.ToString();
  }
}

TEST_F(DetectTest, JsonCarriesTheConfigAndTheFindings) {
  AnsweringSlurm();
  Detection d = Detect(in_);
  auto j = nlohmann::json::parse(DetectionJson(d, in_));
  EXPECT_EQ(j["config"]["backend"], "slurm");
  EXPECT_EQ(j["config"]["slurmPartition"], "debug");
  EXPECT_EQ(j["config"]["stateDir"], "/var/lib/rsl");
  EXPECT_EQ(j["found"]["slurm"]["cluster"], "rsl");
  EXPECT_EQ(j["found"]["slurm"]["nodes"], 2);
  EXPECT_EQ(j["found"]["kubernetes"]["reachability"], "not checked");
  EXPECT_TRUE(j["warnings"].empty());
}

}  // namespace
}  // namespace rsl::cli
