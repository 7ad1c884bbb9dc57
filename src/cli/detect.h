// `rsl-controller detect`: what an installer would find around the controller, and the
// controller config file (docs/controller-config.md) it would write from it. It looks for
//  - Slurm: sinfo/scontrol on PATH, and whether slurmctld answers (cluster, partitions, the
//    default one, nodes, their features and GRES);
//  - Kubernetes: a kubeconfig ($KUBECONFIG, ~/.kube/config) and its current context, or the
//    in-cluster service account; the API server is NOT contacted;
//  - S3: AWS_ENDPOINT_URL(_S3), the profiles of ~/.aws/config and ~/.aws/credentials (never
//    printing a key);
//  - HDFS and YARN: $HADOOP_CONF_DIR or /etc/hadoop/conf (core-site, hdfs-site, yarn-site).
// The backend it picks: slurm when slurmctld answers, else k8s when a kubeconfig has a current
// context (or the service account is there), else local.
//
// Detection never fails: a missing tool or file is a finding, a broken file a warning (with
// file:line and the cause), and the result is still a config file the controller accepts.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/status.h"

namespace rsl::cli {

//! How long one Slurm client command may take: slurmctld answers a ping in milliseconds, but
//! a controller that is down makes the clients retry for their MessageTimeout (10 s default).
inline constexpr int64_t kDetectCommandTimeoutMs = 15000;

//! What detect looks at and the settings it writes besides what it found.
struct DetectInput {
  Env* env = nullptr;                       //!< files and processes; Env::Default() in the program
  std::map<std::string, std::string> vars;  //!< the environment (PATH, HOME, KUBECONFIG, ...)
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
  std::string hadoop_default_dir = "/etc/hadoop/conf";  //!< used when HADOOP_CONF_DIR is unset
  int64_t command_timeout_ms = kDetectCommandTimeoutMs;
  //! Where relative paths in the variables (KUBECONFIG=kube.yaml) are from: the config file
  //! takes relative paths from its own directory, so detect writes them absolute.
  std::string cwd = "/";
  std::string state_dir = "/var/lib/rsl";  //!< written as stateDir
  std::string listen = "127.0.0.1:7070";   //!< written as listen
};

struct SlurmFound {
  std::string sinfo;       //!< its path on PATH ("" = not found)
  std::string scontrol;    //!< its path on PATH ("" = not found)
  std::string slurm_conf;  //!< $SLURM_CONF, if set
  bool answering = false;  //!< `scontrol ping` says slurmctld is UP
  std::string error;       //!< why it is not answering (a client's own message)
  std::string cluster;     //!< ClusterName
  std::vector<std::string> partitions;
  std::string default_partition;
  int nodes = 0;
  std::vector<std::string> features;  //!< of all nodes, sorted, without duplicates
  std::vector<std::string> gres;      //!< "gpu:a100:4 (2 nodes)": GRES of the nodes
};

struct KubeFound {
  std::string source;  //!< the kubeconfig or service-account directory ("" = none found)
  bool in_cluster = false;
  std::string context, server, namespace_, auth;  //!< auth: Connection::Describe()
  std::string error;               //!< why the kubeconfig is not usable (its file:line)
  std::vector<std::string> tried;  //!< where it looked, in order
};

struct S3Profile {
  std::string name;      //!< "default", "dev"
  std::string endpoint;  //!< endpoint_url (or s3.endpoint_url)
  std::string region;
  std::string credentials;  //!< where its keys are ("~/.aws/credentials [dev]"; "" = none)
};

struct S3Found {
  std::string env_endpoint;  //!< AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL
  std::string env_endpoint_var;
  std::string env_region;
  bool env_keys = false;  //!< AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are set
  std::vector<S3Profile> profiles;
  std::vector<std::string> files;  //!< the AWS files read
};

struct HadoopFound {
  std::string conf_dir;                //!< "" = none found
  std::string conf_dir_from;           //!< "HADOOP_CONF_DIR" or "default"
  std::vector<std::string> files;      //!< the *-site.xml files read
  std::string default_fs;              //!< fs.defaultFS
  std::string nameservice;             //!< dfs.nameservices' first (HA), else the defaultFS host
  std::vector<std::string> namenodes;  //!< RPC host:port, one per namenode
  std::vector<std::string> webhdfs;    //!< http(s)://host:port, one per namenode
  std::string resource_manager;        //!< yarn.resourcemanager.address (or its HA ones)
  bool kerberos = false;               //!< hadoop.security.authentication=kerberos
};

struct Detection {
  SlurmFound slurm;
  KubeFound kube;
  S3Found s3;
  HadoopFound hadoop;
  std::vector<Error> warnings;  //!< broken files, commands that misbehaved
  std::string backend;          //!< local | slurm | k8s
  std::string backend_reason;
};

//! Looks at everything `in` names. Never fails: see Detection::warnings.
Detection Detect(const DetectInput& in);

//! The controller config file for `d`: the keys of docs/controller-config.md, with what was
//! found, from where, and what is missing as comments; `seedctl datasource register` commands
//! for the data found, as comments too. ParseControllerConfig accepts it unchanged.
std::string DetectionYaml(const Detection& d, const DetectInput& in);
//! The same as one JSON object: {"config": {...}, "found": {...}, "warnings": [...]}.
std::string DetectionJson(const Detection& d, const DetectInput& in);

//! `rsl-controller detect [--state-dir D] [--listen A] [--output yaml|json]`: argv[0] is
//! "detect". Prints the config on stdout, warnings on stderr; 0 unless the flags are wrong.
int RunDetect(int argc, char** argv);

}  // namespace rsl::cli
