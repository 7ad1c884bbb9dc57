// rsl-controller: the daemon. Store + engine + backend behind the HTTP/JSON API
// (docs/api.md). Recovers unfinished runs on start; on SIGTERM/SIGINT stops accepting
// requests and stops the engine, leaving running steps to be adopted by the next start.
// Its settings come from flags and `--config FILE` (cli/controller_config.h).
#include <cstring>
#include <iostream>

#include "api/audit.h"
#include "api/auth.h"
#include "api/controller_service.h"
#include "api/metrics.h"
#include "api/metrics_hooks.h"
#include "api/server.h"
#include "cli/controller_config.h"
#include "cli/detect.h"
#include "runtime/rotate_key.h"
#include "runtime/runtime.h"

namespace {

int Fail(const rsl::Error& e) {
  std::cerr << "rsl-controller: " << e.ToString() << "\n" << e.code << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  // `rsl-controller detect`: prints the config file it would use, starts nothing.
  if (argc > 1 && std::strcmp(argv[1], "detect") == 0)
    return rsl::cli::RunDetect(argc - 1, argv + 1);
  rsl::cli::ControllerFlags f;
  if (auto rc = rsl::cli::ParseControllerCommandLine(argc, argv, &f)) return *rc;
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
