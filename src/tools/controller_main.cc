// rsl-controller: the daemon. Store + engine + backend behind the HTTP/JSON API
// (docs/api.md). Recovers unfinished runs on start; on SIGTERM/SIGINT stops accepting
// requests and stops the engine, leaving running steps to be adopted by the next start.
#include <CLI/CLI.hpp>

#include <cstring>
#include <iostream>

#include "api/audit.h"
#include "api/auth.h"
#include "api/controller_service.h"
#include "api/metrics.h"
#include "api/metrics_hooks.h"
#include "api/server.h"
#include "cli/cli.h"
#include "runtime/rotate_key.h"
#include "runtime/runtime.h"

namespace {

struct Flags {
  std::string listen = "127.0.0.1:7070";
  std::string tokens_file;
  std::string key_file;
  bool rotate_key = false;
  std::string tls_cert;
  std::string tls_key;
  bool insecure_listen = false;
  bool tls_self_signed = false;
  int retain_versions = 0;
  std::string retain_for;
  std::string tls_client_ca;
  bool tls_require_client_cert = false;
  std::string tls_client_crl;
  rsl::runtime::RuntimeOptions runtime;
};

int Fail(const rsl::Error& e) {
  std::cerr << "rsl-controller: " << e.ToString() << "\n" << e.code << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"rsl-controller: the RSL daemon (REST API, engine, store)", "rsl-controller"};
  app.add_option("--listen", f.listen, "HOST:PORT to listen on (port 0: any free port)");
  app.add_option("--state-dir", f.runtime.state_dir, "state directory (database, runs, logs)")
      ->required();
  app.add_option("--node-file", f.runtime.backend_options.node_file,
                 "declared nodes and devices (local backend)");
  app.add_option("--insecure-registry", f.runtime.images.insecure_registries,
                 "a registry (HOST[:PORT]) reached over plain HTTP besides loopback ones; "
                 "repeatable (docs/image.md)");
  app.add_option("--tokens", f.tokens_file, "static tokens file: token,subject,role,ns1;ns2");
  app.add_option("--backend", f.runtime.backend, "local | slurm | k8s");
  app.add_option("--kubeconfig", f.runtime.backend_options.kubeconfig,
                 "k8s: kubeconfig file (default $KUBECONFIG, ~/.kube/config, in-cluster)");
  app.add_option("--context", f.runtime.backend_options.kube_context,
                 "k8s: kubeconfig context (default: current)");
  app.add_option("--k8s-namespace", f.runtime.backend_options.k8s_namespaces,
                 "k8s: RSLNS=K8SNS namespace mapping; repeatable (default: the same name)");
  app.add_option("--k8s-staging", f.runtime.backend_options.k8s_staging,
                 "k8s: where pods write outputs: s3://bucket/prefix or file:///shared/dir");
  app.add_option("--capability-labels", f.runtime.backend_options.capability_labels,
                 "k8s: capability -> node label table file (docs/backends/k8s.md)");
  app.add_option("--slurm-conf", f.runtime.backend_options.slurm_conf,
                 "SLURM_CONF for --backend slurm");
  app.add_option("--slurm-partition", f.runtime.backend_options.slurm_partition,
                 "partition for --backend slurm");
  app.add_option("--slurm-patience", f.runtime.backend_options.slurm_patience,
                 "how long live steps wait for an unreachable slurmctld before they fail "
                 "(default 5m)");
  app.add_option(
      "--step-isolation", f.runtime.backend_options.isolation,
      "who steps run as: auto | users | user:NAME | namespace | none (docs/security.md)");
  app.add_option("--runs-dir", f.runtime.runs_dir,
                 "where run directories live (default: <state-dir>-runs)");
  app.add_option("--retain-versions", f.retain_versions,
                 "retention: keep the history of the newest N finished runs of each workload "
                 "name (0: all; docs/api.md, Retention)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--retain-for", f.retain_for,
                 "retention: keep a finished run's history this long, e.g. 7d (default: forever)");
  app.add_option("--tls-cert", f.tls_cert, "serve HTTPS: PEM certificate chain (with --tls-key)");
  app.add_option("--tls-key", f.tls_key, "PEM private key of --tls-cert");
  app.add_flag("--tls-self-signed", f.tls_self_signed,
               "serve HTTPS with a key pair made on first start in the state directory "
               "(tls.crt, tls.key); prints its fingerprint")
      ->excludes("--tls-cert")
      ->excludes("--tls-key");
  auto* client_ca = app.add_option(
      "--tls-client-ca", f.tls_client_ca,
      "mutual TLS: ask clients for a certificate and verify it against this PEM CA file; a "
      "verified certificate authenticates as CN=subject, O=namespace:role (docs/security.md)");
  app.add_flag("--tls-require-client-cert", f.tls_require_client_cert,
               "with --tls-client-ca: refuse the TLS handshake of a client without a certificate "
               "(default: such clients authenticate with bearer tokens)")
      ->needs(client_ca);
  app.add_option("--tls-client-crl", f.tls_client_crl,
                 "with --tls-client-ca: refuse client certificates these PEM revocation lists "
                 "revoke (read again when the file changes; a CA without a list fails closed)")
      ->needs(client_ca);
  app.add_flag("--insecure-listen", f.insecure_listen,
               "allow plain HTTP on an address other than loopback (tokens and secrets would "
               "cross the network in clear)");
  app.add_option("--key-file", f.key_file,
                 "key ring sealing secrets at rest (default <state-dir>/secret.key; env "
                 "RSL_SECRET_KEY_FILE)");
  app.add_flag("--rotate-key", f.rotate_key,
               "re-seal every secret with a new key, then exit (stop the controller first)");
  if (auto rc = rsl::cli::ParseCommandLine(app, argc, argv)) return *rc;
  // Every component that seals or opens secrets reads the key ring through this variable.
  if (!f.key_file.empty()) rsl::runtime::UseSecretKeyFile(f.key_file);
  if (f.rotate_key) {
    auto r = rsl::runtime::RotateSecretKey(f.runtime.state_dir);
    if (!r.ok()) return Fail(r.error());
    std::cout << "rsl-controller: secrets re-sealed with key " << r->new_key_id << " (was "
              << r->old_key_id << "); key ring " << r->key_file << std::endl;
    return 0;
  }

  auto retention = rsl::runtime::RetentionFromFlags(f.retain_versions, f.retain_for);
  if (!retention.ok()) return Fail(retention.error());

  std::string host;
  int port = 0;
  rsl::Status st = rsl::api::ParseListen(f.listen, &host, &port);
  if (!st.ok()) return Fail(st.error());
  // A self-signed pair is made in the state directory once it is open; it counts as TLS here.
  const std::string self = "(self-signed)";
  st = rsl::api::CheckListenSecurity(f.listen, host, f.tls_self_signed ? self : f.tls_cert,
                                     f.tls_self_signed ? self : f.tls_key, f.insecure_listen);
  if (!st.ok()) return Fail(st.error());
  const bool tls = !f.tls_cert.empty() || f.tls_self_signed;
  st = rsl::api::CheckClientCaFlags(f.tls_client_ca, tls);
  if (!st.ok()) return Fail(st.error());
  // SIGTERM/SIGINT are only noted (main waits for them below), before any thread starts.
  auto stop = rsl::runtime::StopSignals::Install();
  if (!stop.ok()) return Fail(stop.error());

  rsl::api::Metrics metrics;
  rsl::api::DescribeControllerMetrics(&metrics);
  f.runtime.lock = true;
  f.runtime.extend_hooks = [&metrics](rsl::engine::Hooks* hooks, rsl::store::Store* store) {
    rsl::api::InstrumentHooks(hooks, &metrics, store);
  };
  auto rt = rsl::runtime::Runtime::Open(f.runtime);
  if (!rt.ok()) return Fail(rt.error());
  const std::string& state_dir = (*rt)->state_dir();
  auto tokens = rsl::api::TokenStore::Open(state_dir);
  if (!tokens.ok()) return Fail(tokens.error());
  if (!f.tokens_file.empty()) {
    st = (*tokens)->LoadTokensFile(f.tokens_file);
    if (!st.ok()) return Fail(st.error());
  }
  auto audit = rsl::api::AuditLog::Open(state_dir);
  if (!audit.ok()) return Fail(audit.error());

  rsl::engine::Engine* engine = (*rt)->engine();
  rsl::api::ControllerService service((*rt)->store(), engine, (*rt)->backend(), &metrics,
                                      state_dir);
  rsl::api::ApiServer server(&service, tokens->get(), audit->get(), &metrics);
  if (f.tls_self_signed) {
    f.tls_cert = state_dir + "/tls.crt";
    f.tls_key = state_dir + "/tls.key";
    st = rsl::api::EnsureSelfSignedCertificate(f.tls_cert, f.tls_key, host);
    if (!st.ok()) return Fail(st.error());
  }
  if (tls) {
    st = server.EnableTls(f.tls_cert, f.tls_key);
    if (!st.ok()) return Fail(st.error());
  }
  if (!f.tls_client_ca.empty()) {
    st = server.EnableClientCertificates(f.tls_client_ca, f.tls_require_client_cert);
    if (!st.ok()) return Fail(st.error());
    if (!f.tls_client_crl.empty()) {
      st = server.EnableClientCrl(f.tls_client_crl);
      if (!st.ok()) return Fail(st.error());
    }
  }
  // The address first: a controller that cannot have its port starts and recovers nothing.
  st = server.Listen(host, port);
  if (!st.ok()) return Fail(st.error());
  st = engine->Start();
  if (!st.ok()) return Fail(st.error());
  st = engine->Recover();
  if (!st.ok()) return Fail(st.error());
  server.Serve();
  // Tests and scripts read this line to learn the port (with --listen HOST:0).
  const std::string scheme = tls ? "https://" : "http://";
  std::cout << "rsl-controller " << rsl::api::kControllerVersion << " listening on " << scheme
            << host << ":" << server.port() << " (state " << state_dir << ", backend "
            << (*rt)->backend()->name() << ")" << std::endl;
  if (tls) {
    std::cout << "rsl-controller: TLS certificate SHA-256 fingerprint " << server.tls_fingerprint()
              << std::endl;
  }
  if (!f.tls_client_ca.empty()) {
    std::cout << "rsl-controller: client certificates "
              << (f.tls_require_client_cert ? "required" : "accepted") << ", verified against "
              << f.tls_client_ca
              << (f.tls_client_crl.empty() ? ""
                                           : ", revocation checked against " + f.tls_client_crl)
              << std::endl;
  }
  (void)(*rt)->PublishAddress(scheme + host + ":" + std::to_string(server.port()));

  // Until a stop signal: every 10 s, give freed memory back (RSS stays near the live heap
  // however many workloads have finished; docs/api.md); every minute (and at once),
  // apply the retention policy.
  rsl::runtime::ApplyRetention(rt->get(), *retention);
  int sig = 0;
  for (int tick = 1; (sig = (*stop)->WaitFor(10000)) == 0; ++tick) {
    rsl::runtime::ReturnFreeMemory();
    if (tick % 6 == 0) rsl::runtime::ApplyRetention(rt->get(), *retention);
  }
  std::cout << "rsl-controller: " << strsignal(sig) << ", shutting down" << std::endl;
  server.Stop();
  engine->Stop(/*stop_steps=*/false);
  // Like every running step, serving steps run on (HAProxy answers throughout) and the next
  // start adopts them: a restart (an upgrade) does not take a service down.
  (*rt)->LeaveServingRunning();
  std::cout << "rsl-controller: stopped" << std::endl;
  return 0;
}
