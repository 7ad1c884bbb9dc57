#include "api/tls_probe.h"

#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>

#include "base/codes.h"

namespace rsl::api {

namespace {

constexpr int kProbeTimeoutSec = 5;

int Connect(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return -1;
  int fd = -1;
  for (addrinfo* ai = found; ai && fd < 0; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    timeval tv{kProbeTimeoutSec, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  return fd;
}

// The reason of the last OpenSSL error when it is an alert from the peer, without the
// protocol prefix; "" otherwise.
std::string PeerAlert() {
  unsigned long e = 0, last = 0;
  while ((e = ERR_get_error()) != 0) last = e;
  const char* reason = last ? ERR_reason_error_string(last) : nullptr;
  std::string r = reason ? reason : "";
  size_t at = r.find("alert ");
  if (at == std::string::npos) return "";
  return r.substr(at + 6);
}

}  // namespace

Result<std::string> ProbeClientRefusal(const std::string& host, int port,
                                       const std::string& cert_file, const std::string& key_file) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) return Error(codes::kIoError, "OpenSSL cannot make a TLS context");
  SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);  // the server's trust is checked apart
  auto load_error = [&](const std::string& what, const std::string& file) {
    unsigned long e = ERR_get_error();
    ERR_clear_error();
    char buf[256] = "no such file";
    if (e != 0) ERR_error_string_n(e, buf, sizeof(buf));
    SSL_CTX_free(ctx);
    return Error(codes::kInvalidArgument,
                 "cannot load the client " + what + " " + file + ": " + buf)
        .Value(file)
        .Hint(
            "--client-certificate takes a PEM certificate (then its intermediates), "
            "--client-key its unencrypted PEM private key");
  };
  if (!cert_file.empty() && SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1) {
    return load_error("certificate", cert_file);
  }
  if (!key_file.empty() &&
      (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
       SSL_CTX_check_private_key(ctx) != 1)) {
    return load_error("key", key_file);
  }
  int fd = Connect(host, port);
  if (fd < 0) {
    SSL_CTX_free(ctx);
    return Error(codes::kIoError, "cannot connect to " + host + ":" + std::to_string(port));
  }
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  SSL_set_tlsext_host_name(ssl, host.c_str());
  std::string alert;
  ERR_clear_error();
  if (SSL_connect(ssl) != 1) {
    alert = PeerAlert();
  } else {
    // TLS 1.3 sends the client's certificate after the client's handshake is done: the
    // server's verdict arrives with the first read.
    const std::string probe =
        "HEAD /healthz HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n";
    char byte;
    if (SSL_write(ssl, probe.data(), static_cast<int>(probe.size())) <= 0 ||
        SSL_read(ssl, &byte, 1) <= 0) {
      alert = PeerAlert();
    }
  }
  ERR_clear_error();
  SSL_free(ssl);
  ::close(fd);
  SSL_CTX_free(ctx);
  return alert;
}

std::string Sha256Fingerprint(X509* cert) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (X509_digest(cert, EVP_sha256(), md, &n) != 1) return "";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    char hex[4];
    std::snprintf(hex, sizeof(hex), i + 1 < n ? "%02X:" : "%02X", md[i]);
    out += hex;
  }
  return out;
}

Result<TlsPeer> ProbeTlsPeer(const std::string& host, int port, const std::string& ca_file) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) return Error(codes::kIoError, "OpenSSL cannot make a TLS context");
  if (ca_file.empty()) {
    SSL_CTX_set_default_verify_paths(ctx);
  } else {
    SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr);
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);  // look, do not refuse: we report
  int fd = Connect(host, port);
  if (fd < 0) {
    SSL_CTX_free(ctx);
    return Error(codes::kIoError, "cannot connect to " + host + ":" + std::to_string(port));
  }
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  SSL_set_tlsext_host_name(ssl, host.c_str());
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);  // also accepts an IP in a SAN
  if (X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) == 1) {
    X509_VERIFY_PARAM_set1_host(param, nullptr, 0);
  }
  TlsPeer peer;
  Result<TlsPeer> result = Error(codes::kIoError, "no TLS handshake with " + host);
  if (SSL_connect(ssl) == 1) {
    X509* cert = SSL_get_peer_certificate(ssl);
    if (cert) {
      peer.fingerprint = Sha256Fingerprint(cert);
      char name[256] = {0};
      X509_NAME_oneline(X509_get_subject_name(cert), name, sizeof(name));
      peer.subject = name;
      X509_free(cert);
    }
    long v = SSL_get_verify_result(ssl);
    if (v != X509_V_OK) peer.problem = X509_verify_cert_error_string(v);
    result = peer;
  }
  ERR_clear_error();
  SSL_free(ssl);
  ::close(fd);
  SSL_CTX_free(ctx);
  return result;
}

}  // namespace rsl::api
