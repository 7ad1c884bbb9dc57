#include "api/tls_server.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <vector>

#include "api/tls_probe.h"
#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"

namespace rsl::api {

namespace {

constexpr int kPollMs = 200;             // how often a connection checks for Stop
constexpr int kWriteTimeoutMs = 30'000;  // as HttpServerOptions::write_timeout
constexpr size_t kPumpBytes = 64 * 1024;

std::string OpenSslReason() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown reason";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

// Waits for `events` on fd; false on timeout, stop or error.
bool Wait(int fd, short events, int timeout_ms, const std::atomic<bool>& stopping) {
  int waited = 0;
  while (!stopping && waited < timeout_ms) {
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, kPollMs);
    if (r > 0) return (p.revents & (POLLERR | POLLNVAL)) == 0 || (p.revents & events);
    if (r < 0 && errno != EINTR) return false;
    waited += kPollMs;
  }
  return false;
}

// Closes a connection whose handshake failed without resetting it: the client (TLS 1.3)
// may already have sent its request after its half of the handshake, and a close with
// unread data sends a reset, which can discard the alert telling the client why (it would
// then see "connection reset" instead of "certificate expired"). So: no more writes, read
// and drop what the client sends for a moment (bounded in time and bytes), then close.
void LingeringClose(int fd, const std::atomic<bool>& stopping) {
  constexpr int kLingerMs = 1000;
  constexpr size_t kLingerBytes = 256 * 1024;
  ::shutdown(fd, SHUT_WR);
  size_t dropped = 0;
  char buf[4096];
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kLingerMs);
  while (!stopping && dropped < kLingerBytes) {
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    deadline - std::chrono::steady_clock::now())
                                    .count());
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, std::min(left, kPollMs));
    if (r < 0 && errno != EINTR) break;
    if (r <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0 && !(n < 0 && (errno == EINTR || errno == EAGAIN))) break;  // EOF or error
    if (n > 0) dropped += static_cast<size_t>(n);
  }
  ::close(fd);
}

// Writes all of data through ssl on a non-blocking socket.
bool SslWriteAll(SSL* ssl, int fd, const char* data, size_t len, const std::atomic<bool>& stop) {
  while (len > 0) {
    int w = SSL_write(ssl, data, static_cast<int>(len));
    if (w > 0) {
      data += w;
      len -= static_cast<size_t>(w);
      continue;
    }
    int err = SSL_get_error(ssl, w);
    short want = err == SSL_ERROR_WANT_READ ? POLLIN : err == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
    if (want == 0 || !Wait(fd, want, kWriteTimeoutMs, stop)) return false;
  }
  return true;
}

bool WriteAll(int fd, const char* data, size_t len) {
  while (len > 0) {
    ssize_t w = ::send(fd, data, len, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    len -= static_cast<size_t>(w);
  }
  return true;
}

// The values of every `nid` entry of `name`, as UTF-8, in order.
std::vector<std::string> NameEntries(X509_NAME* name, int nid) {
  std::vector<std::string> out;
  for (int i = X509_NAME_get_index_by_NID(name, nid, -1); i >= 0;
       i = X509_NAME_get_index_by_NID(name, nid, i)) {
    unsigned char* utf8 = nullptr;
    int n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i)));
    if (n >= 0) out.emplace_back(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
    OPENSSL_free(utf8);
  }
  return out;
}

std::shared_ptr<const ClientCertificate> ReadClientCertificate(X509* cert) {
  auto c = std::make_shared<ClientCertificate>();
  X509_NAME* subject = X509_get_subject_name(cert);
  std::vector<std::string> cn = NameEntries(subject, NID_commonName);
  if (!cn.empty()) c->common_name = cn.back();  // the most specific one, as RFC 6125 reads it
  c->organizations = NameEntries(subject, NID_organizationName);
  c->fingerprint = Sha256Fingerprint(cert);
  return c;
}

// The chain depth a client certificate may have below the CA file's certificates.
constexpr int kMaxClientChainDepth = 4;

// Notes which client certificate failed verification (the handshake that fails keeps none):
// its subject goes into the refusal's audit entry.
int NoteRefusedClient(int ok, X509_STORE_CTX* store) {
  if (ok) return ok;
  auto* ssl =
      static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  auto* note = ssl ? static_cast<std::string*>(SSL_get_app_data(ssl)) : nullptr;
  X509* leaf = X509_STORE_CTX_get0_cert(store);
  if (note && note->empty() && leaf) {
    char name[256] = {0};
    X509_NAME_oneline(X509_get_subject_name(leaf), name, sizeof(name));
    *note = std::string(name) + ", SHA-256 " + Sha256Fingerprint(leaf);
  }
  return ok;
}

}  // namespace

Status EnsureSelfSignedCertificate(const std::string& cert_file, const std::string& key_file,
                                   const std::string& host) {
  if (PathExists(cert_file) && PathExists(key_file)) return Status::Ok();
  constexpr long kValidSeconds = 825L * 24 * 3600;  // the longest validity browsers accept
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  std::string names = "DNS:localhost,IP:127.0.0.1,IP:::1";
  char hostname[256] = {0};
  if (::gethostname(hostname, sizeof(hostname) - 1) == 0 && hostname[0]) {
    names += std::string(",DNS:") + hostname;
  }
  if (!host.empty() && host != "0.0.0.0" && host != "::" && host != "localhost" &&
      !StartsWith(host, "127.") && host != "::1") {
    bool ip = host.find_first_not_of("0123456789.") == std::string::npos ||
              host.find(':') != std::string::npos;
    names += (ip ? ",IP:" : ",DNS:") + host;
  }
  bool ok =
      key && cert && X509_set_version(cert, 2) == 1 &&
      ASN1_INTEGER_set(X509_get_serialNumber(cert), static_cast<long>(::time(nullptr))) == 1 &&
      X509_gmtime_adj(X509_getm_notBefore(cert), -3600) &&
      X509_gmtime_adj(X509_getm_notAfter(cert), kValidSeconds) && X509_set_pubkey(cert, key) == 1;
  if (ok) {
    X509_NAME* name = X509_get_subject_name(cert);
    ok = X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                    reinterpret_cast<const unsigned char*>("rsl-controller"), -1,
                                    -1, 0) == 1 &&
         X509_set_issuer_name(cert, name) == 1;
  }
  if (ok) {
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, cert, cert, nullptr, nullptr, 0);
    X509_EXTENSION* san = X509V3_EXT_conf_nid(nullptr, &v3, NID_subject_alt_name, names.c_str());
    ok = san && X509_add_ext(cert, san, -1) == 1;
    if (san) X509_EXTENSION_free(san);
    ok = ok && X509_sign(cert, key, EVP_sha256()) > 0;
  }
  Status st = Status::Ok();
  if (!ok) st = Error(codes::kInternal, "OpenSSL cannot make a certificate: " + OpenSslReason());
  if (st.ok()) {
    // The key first, private from its creation; the certificate names it.
    FILE* kf = nullptr;
    int fd = ::open(key_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) kf = ::fdopen(fd, "w");
    if (!kf || PEM_write_PrivateKey(kf, key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
      st = OsError(codes::kIoError, "cannot write the TLS key", key_file, errno);
    }
    if (kf) std::fclose(kf);
  }
  if (st.ok()) {
    FILE* cf = std::fopen(cert_file.c_str(), "w");
    if (!cf || PEM_write_X509(cf, cert) != 1) {
      st = OsError(codes::kIoError, "cannot write the TLS certificate", cert_file, errno);
    }
    if (cf) std::fclose(cf);
  }
  X509_free(cert);
  EVP_PKEY_free(key);
  return st;
}

TlsFrontend::TlsFrontend(HttpServer* http, int max_connections)
    : http_(http), max_connections_(max_connections) {}

TlsFrontend::~TlsFrontend() {
  Stop();
  if (ctx_) SSL_CTX_free(ctx_);
}

Status TlsFrontend::LoadCertificate(const std::string& cert_file, const std::string& key_file) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx) return Error(codes::kInternal, "OpenSSL: " + OpenSslReason());
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  auto fail = [&](const std::string& what, const std::string& file, const std::string& hint) {
    Error e(codes::kInvalidArgument, what + " " + file + ": " + OpenSslReason());
    e.Value(file).Hint(hint);
    SSL_CTX_free(ctx);
    return e;
  };
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1) {
    return fail("cannot load the TLS certificate", cert_file,
                "--tls-cert takes a PEM file: the server certificate, then its intermediates");
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    return fail("cannot load the TLS private key", key_file,
                "--tls-key takes the PEM private key of --tls-cert (unencrypted)");
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return fail("the TLS private key does not match the certificate", key_file,
                "pass the key the certificate was issued for");
  }
  if (ctx_) SSL_CTX_free(ctx_);
  ctx_ = ctx;
  fingerprint_ = Sha256Fingerprint(SSL_CTX_get0_certificate(ctx_));
  return Status::Ok();
}

Status TlsFrontend::LoadClientCa(const std::string& ca_file, bool required) {
  STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(ca_file.c_str());
  if (!names || sk_X509_NAME_num(names) == 0 ||
      SSL_CTX_load_verify_locations(ctx_, ca_file.c_str(), nullptr) != 1) {
    if (names) sk_X509_NAME_pop_free(names, X509_NAME_free);
    std::string why = PathExists(ca_file) ? OpenSslReason() : "no such file";
    return Error(codes::kInvalidArgument, "cannot load the client CA file " + ca_file + ": " + why)
        .Value(ca_file)
        .Hint(
            "--tls-client-ca takes a PEM file of the CA certificates that issue client "
            "certificates");
  }
  SSL_CTX_set_client_CA_list(ctx_, names);  // owns `names` now; sent with the request
  SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER | (required ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
                     NoteRefusedClient);
  SSL_CTX_set_verify_depth(ctx_, kMaxClientChainDepth);
  // Session resumption with client verification needs a context id (OpenSSL refuses a resumed
  // session without one).
  static const unsigned char kSessionContext[] = "rsl-controller";
  SSL_CTX_set_session_id_context(ctx_, kSessionContext, sizeof(kSessionContext) - 1);
  client_ca_ = true;
  client_ca_file_ = ca_file;
  return Status::Ok();
}

namespace {

// A file's modification time and size, "" when it cannot be read: what tells a changed file.
std::string FileStamp(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return "";
  return std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + "/" +
         std::to_string(st.st_size);
}

// A verification store of the CA certificates of `ca_file` and the revocation lists of
// `crl_file`, checking the leaf certificate against them; `lists` counts the lists read.
Result<std::shared_ptr<X509_STORE>> MakeCrlStore(const std::string& ca_file,
                                                 const std::string& crl_file, int* lists) {
  std::shared_ptr<X509_STORE> store(X509_STORE_new(), X509_STORE_free);
  auto refuse = [&](const std::string& why) {
    return Error(codes::kInvalidArgument,
                 "cannot load the certificate revocation lists " + crl_file + ": " + why)
        .Value(crl_file)
        .Hint(
            "--tls-client-crl takes a PEM file of the client CAs' CRLs (-----BEGIN X509 CRL-----)");
  };
  if (!store || X509_STORE_load_file(store.get(), ca_file.c_str()) != 1) {
    return refuse("the client CA file " + ca_file + " does not load: " + OpenSslReason());
  }
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_file(crl_file.c_str(), "r"), BIO_free);
  if (!bio) return refuse(PathExists(crl_file) ? OpenSslReason() : "no such file");
  *lists = 0;
  for (;;) {
    X509_CRL* crl = PEM_read_bio_X509_CRL(bio.get(), nullptr, nullptr, nullptr);
    if (!crl) break;
    int added = X509_STORE_add_crl(store.get(), crl);
    X509_CRL_free(crl);
    if (added != 1) return refuse(OpenSslReason());
    ++*lists;
  }
  // The loop ends at the end of the file (no further PEM block) or at a block that does not
  // parse: only the first is fine.
  unsigned long last = ERR_peek_last_error();
  ERR_clear_error();
  if (last != 0 &&
      !(ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE)) {
    char buf[256];
    ERR_error_string_n(last, buf, sizeof(buf));
    return refuse(std::string("list ") + std::to_string(*lists + 1) + " does not parse: " + buf);
  }
  if (*lists == 0) return refuse("no certificate revocation list in it");
  X509_STORE_set_flags(store.get(), X509_V_FLAG_CRL_CHECK);
  return store;
}

}  // namespace

Status TlsFrontend::LoadClientCrl(const std::string& crl_file) {
  int lists = 0;
  auto store = MakeCrlStore(client_ca_file_, crl_file, &lists);
  if (!store.ok()) return store.error();
  std::lock_guard<std::mutex> lock(crl_mu_);
  crl_file_ = crl_file;
  verify_store_ = *store;
  crl_stamp_ = FileStamp(crl_file);
  crl_checked_ = std::chrono::steady_clock::now();
  return Status::Ok();
}

std::shared_ptr<X509_STORE> TlsFrontend::VerifyStore() {
  std::lock_guard<std::mutex> lock(crl_mu_);
  if (crl_file_.empty()) return nullptr;
  auto now = std::chrono::steady_clock::now();
  if (now - crl_checked_ < std::chrono::seconds(1)) return verify_store_;
  crl_checked_ = now;
  std::string stamp = FileStamp(crl_file_);
  if (stamp == crl_stamp_) return verify_store_;
  crl_stamp_ = stamp;
  int lists = 0;
  auto store = MakeCrlStore(client_ca_file_, crl_file_, &lists);
  if (store.ok()) {
    verify_store_ = *store;
    if (on_note_) on_note_(crl_file_ + ": reloaded, " + std::to_string(lists) + " list(s)");
  } else if (on_note_) {
    on_note_("kept the previous revocation lists: " + store.error().message);
  }
  return verify_store_;
}

void TlsFrontend::Attach() {
  http_->SetAcceptHook([this](int fd, const std::string& peer) { OnAccepted(fd, peer); });
}

void TlsFrontend::OnAccepted(int fd, const std::string& peer) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || live_ >= max_connections_) {
      ::close(fd);
      return;
    }
    ++live_;
  }
  std::thread([this, fd, peer] { Serve(fd, peer); }).detach();
}

void TlsFrontend::Serve(int fd, std::string peer) {
  // OpenSSL writes with write(2): a client gone mid-handshake would raise SIGPIPE, which
  // kills the process. Blocked in this thread, it only makes the write fail with EPIPE.
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  SSL* ssl = SSL_new(ctx_);
  int pair[2] = {-1, -1};
  SSL_set_fd(ssl, fd);
  if (client_ca_) {
    // With revocation lists, this connection verifies against the current ones (the store
    // stays alive while the connection holds it, whatever a reload does meanwhile).
    if (auto store = VerifyStore()) SSL_set1_verify_cert_store(ssl, store.get());
  }
  std::string refused_client;  // NoteRefusedClient's note
  SSL_set_app_data(ssl, &refused_client);
  // The handshake, within its deadline (a client that connects and says nothing holds
  // only this thread, and not for long).
  bool ok = true;
  auto deadline = std::chrono::steady_clock::now() + kTlsHandshakeTimeout;
  for (;;) {
    int r = SSL_accept(ssl);
    if (r == 1) break;
    int err = SSL_get_error(ssl, r);
    short want = err == SSL_ERROR_WANT_READ ? POLLIN : err == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    deadline - std::chrono::steady_clock::now())
                                    .count());
    if (want == 0 || left <= 0 || !Wait(fd, want, left, stopping_)) {
      ok = false;
      break;
    }
  }
  const bool handshaken = ok;
  std::shared_ptr<const ClientCertificate> client;
  if (client_ca_ && ok) {
    X509* cert = SSL_get1_peer_certificate(ssl);
    if (cert && SSL_get_verify_result(ssl) == X509_V_OK) client = ReadClientCertificate(cert);
    X509_free(cert);
  } else if (client_ca_ && on_refused_) {
    // Only refusals over the client certificate are reported: port scanners and clients of
    // another protocol fail handshakes too.
    long verify = SSL_get_verify_result(ssl);
    std::string why;
    if (verify != X509_V_OK) {
      why = std::string("client certificate refused: ") + X509_verify_cert_error_string(verify);
      if (!refused_client.empty()) why += " (" + refused_client + ")";
    } else if (ERR_GET_REASON(ERR_peek_error()) == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE) {
      why = "no client certificate (one is required)";
    }
    if (!why.empty()) on_refused_(peer, why);
  }
  ERR_clear_error();
  if (ok && ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) ok = false;
  if (ok) {
    // The server's end is non-blocking like an accepted socket.
    int fl = ::fcntl(pair[1], F_GETFL, 0);
    ::fcntl(pair[1], F_SETFL, fl | O_NONBLOCK);
    http_->Adopt(pair[1], peer, std::move(client));
    pair[1] = -1;
    char buf[kPumpBytes];
    while (!stopping_) {
      pollfd p[2] = {{fd, POLLIN, 0}, {pair[0], POLLIN, 0}};
      bool pending = SSL_pending(ssl) > 0;
      int r = pending ? 1 : ::poll(p, 2, kPollMs);
      if (r < 0 && errno != EINTR) break;
      if (r <= 0) continue;
      if (pending || (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
        int n = SSL_read(ssl, buf, sizeof(buf));
        if (n > 0) {
          if (!WriteAll(pair[0], buf, static_cast<size_t>(n))) break;
        } else {
          int err = SSL_get_error(ssl, n);
          if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) break;  // closed
        }
      }
      if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t n = ::recv(pair[0], buf, sizeof(buf), 0);
        if (n <= 0) break;  // the server closed the connection
        if (!SslWriteAll(ssl, fd, buf, static_cast<size_t>(n), stopping_)) break;
      }
    }
    (void)SSL_shutdown(ssl);
  }
  ERR_clear_error();
  SSL_free(ssl);
  if (handshaken) {
    ::close(fd);
  } else {
    LingeringClose(fd, stopping_);
  }
  if (pair[0] >= 0) ::close(pair[0]);
  if (pair[1] >= 0) ::close(pair[1]);
  std::lock_guard<std::mutex> lock(mu_);
  if (--live_ == 0) idle_cv_.notify_all();
}

void TlsFrontend::Stop() {
  std::unique_lock<std::mutex> lock(mu_);
  stopping_ = true;
  idle_cv_.wait(lock, [&] { return live_ == 0; });
}

}  // namespace rsl::api
