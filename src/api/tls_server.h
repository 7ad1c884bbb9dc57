// HTTPS for rsl-controller: a TLS front end (OpenSSL) before the plain HttpServer. The server
// accepts as usual and hands each new socket to the front end (HttpServer::SetAcceptHook);
// the connection does its TLS handshake on a thread of its own, then the front end hands the plain
// side of a socket pair to HttpServer::Adopt (under the client's real address, so per-address
// limits, audit and rate limits see the client) and copies bytes between the two until either side
// closes. The plain server is unchanged: its head/body timeouts, size limits and connection caps
// apply to TLS clients as to others.
//
// TLS 1.2 or later; a handshake must finish within kTlsHandshakeTimeout; at most
// max_connections TLS connections at once (more are closed right after accept).
//
// Mutual TLS (LoadClientCa): the server asks every client for a certificate and verifies one
// that comes against the client CA file (chain, validity period). A certificate that does not
// verify (unknown CA, expired, not yet valid) fails the handshake with the matching TLS alert;
// so does a connection without one when a certificate is required. A verified certificate's
// subject (CN, O entries) and fingerprint travel with every request of the connection
// (HttpRequest::client_cert); what it may do is the router's business (auth.h).
//
// Revocation (LoadClientCrl): with certificate revocation lists, a client certificate that a
// list revokes fails the handshake ("certificate revoked"), as does one whose CA has no list
// in the file or whose list is past its nextUpdate (fail closed, as OpenSSL's CRL check does).
// The file is read again when it changes (looked at no more than once a second), so a list the
// CA publishes takes effect without a restart; a new file that does not load leaves the
// previous lists in force and is reported through the note callback.
//
// Threading: Start/Stop from one thread; a thread per live connection.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "api/http_server.h"
#include "base/status.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct x509_store_st X509_STORE;

namespace rsl::api {

inline constexpr std::chrono::seconds kTlsHandshakeTimeout{10};

class TlsFrontend {
 public:
  //! `http` (not owned) serves the requests and must outlive this front end.
  TlsFrontend(HttpServer* http, int max_connections);
  ~TlsFrontend();
  TlsFrontend(const TlsFrontend&) = delete;
  TlsFrontend& operator=(const TlsFrontend&) = delete;

  //! Loads a PEM certificate chain and its private key. INVALID_ARGUMENT naming the file and
  //! OpenSSL's reason when either does not load or they do not match.
  Status LoadCertificate(const std::string& cert_file, const std::string& key_file);
  //! Asks clients for a certificate and verifies it against the PEM CA certificates of
  //! `ca_file`; `required`: a client without one fails the handshake too. REQUIRES: after
  //! LoadCertificate. INVALID_ARGUMENT naming the file when it holds no CA certificate.
  Status LoadClientCa(const std::string& ca_file, bool required);
  //! Checks client certificates against the PEM certificate revocation lists of `crl_file`
  //! (one or more, of the client CAs). REQUIRES: after LoadClientCa. INVALID_ARGUMENT naming
  //! the file when it holds no list or a list does not parse.
  Status LoadClientCrl(const std::string& crl_file);
  //! Called when the CRL file changed: read again ("reloaded: N lists") or not ("kept the
  //! previous lists: why"). Set before Attach.
  void SetOnNote(std::function<void(const std::string& note)> f) { on_note_ = std::move(f); }
  //! Called (on a connection's thread) for each handshake refused over its client certificate:
  //! the client's address and why ("certificate has expired", "no client certificate").
  //! Set before Attach.
  void SetOnRefused(std::function<void(const std::string& peer, const std::string& why)> f) {
    on_refused_ = std::move(f);
  }
  //! The SHA-256 fingerprint of the loaded certificate, "AB:CD:..." (what a client pins).
  const std::string& fingerprint() const { return fingerprint_; }

  //! Makes `http` hand every accepted socket to this front end. REQUIRES: a loaded
  //! certificate, before http->Start().
  void Attach();
  //! Takes an accepted TCP socket: handshake and pump on a new thread (closed at once when
  //! max_connections are live or the front end stops).
  void OnAccepted(int fd, const std::string& peer);
  //! Ends every connection and waits for their threads. Idempotent.
  void Stop();

 private:
  void Serve(int fd, std::string peer);
  //! The store client certificates are verified against now (CAs and CRLs), after reading
  //! the CRL file again if it changed; null without CRLs (the context's store is used).
  std::shared_ptr<X509_STORE> VerifyStore();

  HttpServer* http_;
  int max_connections_;
  SSL_CTX* ctx_ = nullptr;
  std::string fingerprint_;
  bool client_ca_ = false;
  std::string client_ca_file_;
  std::string crl_file_;
  std::mutex crl_mu_;
  std::shared_ptr<X509_STORE> verify_store_;           // GUARDED_BY(crl_mu_)
  std::string crl_stamp_;                              // GUARDED_BY(crl_mu_): mtime and size
  std::chrono::steady_clock::time_point crl_checked_;  // GUARDED_BY(crl_mu_)
  std::function<void(const std::string&)> on_note_;
  std::function<void(const std::string&, const std::string&)> on_refused_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable idle_cv_;
  int live_ = 0;  // GUARDED_BY(mu_): connection threads still running (detached)
};

//! A self-signed certificate for a controller without one (--tls-self-signed): when
//! `cert_file` and `key_file` do not exist yet, makes a P-256 key (file mode 0600) and a
//! certificate for CN=rsl-controller valid 825 days, naming localhost, 127.0.0.1, ::1, this
//! machine's host name and `host` (unless it is a wildcard address) as subjectAltNames.
//! Existing files are kept (the fingerprint stays the same across restarts). IO_ERROR naming
//! the file on failure.
Status EnsureSelfSignedCertificate(const std::string& cert_file, const std::string& key_file,
                                   const std::string& host);

}  // namespace rsl::api
