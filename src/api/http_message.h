// The HTTP messages of the API server (http_server.h): a parsed request, the response a
// handler fills (a plain body, or a StreamSource for a chunked one), and how a response is
// put on the wire.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace rsl::api {

//! The client certificate a TLS client presented and the server verified (mutual TLS), as the
//! TLS front end read it.
struct ClientCertificate {
  std::string common_name;                 //!< the subject's CN ("" when it has none)
  std::vector<std::string> organizations;  //!< the subject's O entries, in order
  std::string fingerprint;                 //!< SHA-256, "AB:CD:..."
};

struct HttpRequest {
  std::string method;
  std::string target;                                        //!< as sent: path and query
  std::string path;                                          //!< percent-decoded, without the query
  std::multimap<std::string, std::string> params;            //!< query, percent-decoded
  std::vector<std::pair<std::string, std::string>> headers;  //!< names lower-case
  std::string body;
  std::string remote_addr;
  //! Set when the connection came over TLS with a verified client certificate.
  std::shared_ptr<const ClientCertificate> client_cert;

  bool HasParam(const std::string& key) const { return params.count(key) > 0; }
  //! The first value of `key`, "" when absent.
  std::string Param(const std::string& key) const;
  //! The first header called `name` (any case), "" when absent.
  std::string Header(const std::string& name) const;
};

//! A response body produced piece by piece on the stream thread, never on a request worker.
class StreamSource {
 public:
  enum class State {
    kMore,  //!< more follows: call again once the client has taken what was appended
    kWait,  //!< nothing more yet: call again after the server's stream poll interval
    kDone,  //!< the body ends with what was appended
  };
  virtual ~StreamSource() = default;
  //! Appends the next piece (about max_bytes at most; may be nothing) to *out. Must not block
  //! for long: every stream of the server shares one thread.
  virtual State Next(size_t max_bytes, std::string* out) = 0;
};

struct HttpResponse {
  int status = 200;
  std::string content_type;  //!< "" = no Content-Type
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::shared_ptr<StreamSource> stream;  //!< set: a chunked body from the stream thread

  void SetHeader(const std::string& name, const std::string& value);
  void SetContent(std::string text, const std::string& type);
  void SetStream(const std::string& type, std::shared_ptr<StreamSource> source);
};

using HttpHandler = std::function<void(const HttpRequest&, HttpResponse&)>;

//! "HTTP/1.1 404 Not Found" reason phrases for the statuses the API uses.
const char* HttpReason(int status);

//! The status line and headers of `r`, ending in the empty line: Content-Type when set, the
//! handler's headers, then Transfer-Encoding: chunked or Content-Length: `length`, then
//! Connection: keep-alive or close.
std::string ResponseHead(const HttpResponse& r, bool keep_alive, bool chunked, size_t length);
//! The size line that starts a chunk of `size` bytes, in hex ("1a2b\r\n").
std::string ChunkHeader(size_t size);

}  // namespace rsl::api
