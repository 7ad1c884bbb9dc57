// Why a TLS server was not trusted, for the client's error message: connects once more
// without trusting anything, and reports the certificate the server presented (its SHA-256
// fingerprint, subject, validity) and what verification against the client's CAs says.
#pragma once

#include <string>

#include "base/status.h"

namespace rsl::api {

struct TlsPeer {
  std::string fingerprint;  //!< SHA-256, "AB:CD:..."; "" when no certificate came
  std::string subject;      //!< e.g. "CN=rsl.example.com"
  std::string problem;      //!< "" = trusted; else e.g. "certificate has expired"
};

//! Looks at the certificate of host:port. `ca_file` "" = the system's CAs. Never throws;
//! IO_ERROR when no TLS connection could be made at all.
Result<TlsPeer> ProbeTlsPeer(const std::string& host, int port, const std::string& ca_file);

}  // namespace rsl::api
