// Why a TLS server was not trusted, for the client's error message: connects once more
// without trusting anything, and reports the certificate the server presented (its SHA-256
// fingerprint, subject, validity) and what verification against the client's CAs says.
#pragma once

#include <string>

#include "base/status.h"

typedef struct x509_st X509;

namespace rsl::api {

//! The SHA-256 fingerprint of a certificate, "AB:CD:..." (as `openssl x509 -fingerprint
//! -sha256` prints it); "" when it cannot be computed.
std::string Sha256Fingerprint(X509* cert);

struct TlsPeer {
  std::string fingerprint;  //!< SHA-256, "AB:CD:..."; "" when no certificate came
  std::string subject;      //!< e.g. "CN=rsl.example.com"
  std::string problem;      //!< "" = trusted; else e.g. "certificate has expired"
};

//! Looks at the certificate of host:port. `ca_file` "" = the system's CAs. Never throws;
//! IO_ERROR when no TLS connection could be made at all.
Result<TlsPeer> ProbeTlsPeer(const std::string& host, int port, const std::string& ca_file);

//! Whether host:port refuses a TLS client that presents the PEM certificate chain and key
//! (none when both are ""), for the client's error message when mutual TLS fails: the TLS
//! alert the server sent, without its "tlsv1 alert " prefix ("certificate expired", "unknown
//! ca", "certificate required"), or "" when the server answered a request. The server itself
//! is not verified here. INVALID_ARGUMENT naming the file when the certificate or key does not
//! load.
Result<std::string> ProbeClientRefusal(const std::string& host, int port,
                                       const std::string& cert_file, const std::string& key_file);

}  // namespace rsl::api
