// The API's request handling under any bytes: the request head parser (request line, target,
// query, headers, Content-Length), the route table and its matching, authentication (bearer
// tokens and client-certificate subjects), the handlers and the JSON or YAML bodies of every
// POST, and the first pieces of a streamed answer. Never a crash; every answer has a status the
// API uses, and every JSON answer parses (errors with a code and a message).
//
// Input: byte 0 picks the caller (none, a viewer, an editor or an admin token, or a client
// certificate whose CN and O entries are the headers x-cn and x-o), the rest is the request as
// it arrives on the socket (head, then body).
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "api/audit.h"
#include "api/auth.h"
#include "api/fake_service_test_util.h"
#include "api/http_parse.h"
#include "api/metrics.h"
#include "api/router.h"
#include "api/server.h"
#include "base/strings.h"
#include "spec/parse.h"

namespace {

using rsl::api::Json;

// The fake service, but a submitted workload goes through the real spec parser.
class ParsingService : public rsl::api::testing::FakeService {
 public:
  // As ControllerService does: the namespace is decided inside the parse.
  rsl::Result<Json> Submit(const std::string& yaml, const std::string& source, const std::string&,
                           const NamespaceDecider& decide, const std::string&, rsl::Errors* errors,
                           const AcceptedWrite&) override {
    std::optional<rsl::Result<std::string>> ns;
    rsl::spec::ParseOptions options;
    options.on_namespace = [&](const std::string& yaml_ns) -> rsl::Status {
      ns = decide(yaml_ns);
      return ns->status();
    };
    rsl::spec::ParseResult r = rsl::spec::ParseWorkload(yaml, source, options);
    if (!ns) ns = decide("");
    if (!ns->ok()) {
      *errors = {ns->error()};
      return ns->error();
    }
    if (!r.ok()) {
      *errors = r.errors;
      return errors->front();
    }
    return Obj("wl-20260101-0000000c", **ns);
  }
};

struct World {
  World() {
    // Under /dev/shm when there is one: the audit log is written on every refused or
    // accepted write, and a disk's fsync would make each input slow.
    std::string base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
    dir = base + "/rsl-api-fuzz-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir);
    tokens = std::move(rsl::api::TokenStore::Open(dir).value());
    audit = std::move(rsl::api::AuditLog::Open(dir).value());
    rsl::api::DescribeControllerMetrics(&metrics);
    router = std::make_unique<rsl::api::Router>(
        rsl::api::Services{&service, tokens.get(), audit.get(), &metrics, nullptr, nullptr});
    rsl::api::RegisterApiRoutes(router.get());
    token[1] = *tokens->Create("vera", rsl::api::Role::kViewer, {"risk"});
    token[2] = *tokens->Create("eddie", rsl::api::Role::kEditor, {"risk", "ads"});
    token[3] = *tokens->Create("ada", rsl::api::Role::kAdmin, {"*"});
  }
  ~World() { std::filesystem::remove_all(dir); }

  std::string dir;
  ParsingService service;
  std::unique_ptr<rsl::api::TokenStore> tokens;
  std::unique_ptr<rsl::api::AuditLog> audit;
  rsl::api::Metrics metrics;
  std::unique_ptr<rsl::api::Router> router;
  std::string token[4];
};

constexpr size_t kMaxBody = 1 << 20;
constexpr int kStreamPieces = 3;

bool KnownStatus(int status) {
  switch (status) {
    case 200:
    case 201:
    case 202:
    case 204:
    case 301:
    case 302:
    case 304:
    case 308:
    case 400:
    case 401:
    case 403:
    case 404:
    case 405:
    case 409:
    case 411:
    case 413:
    case 422:
    case 429:
    case 431:
    case 500:
    case 503:
      return true;
    default:
      return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World* world = new World();  // one state directory for the whole run
  if (size < 1) return 0;
  const int caller = data[0] % 5;
  std::string raw(reinterpret_cast<const char*>(data + 1), size - 1);

  size_t end = rsl::api::HeadEnd(raw, 0);
  if (end == std::string::npos) return 0;
  rsl::api::HttpRequest req;
  req.remote_addr = "192.0.2.1";
  rsl::api::RequestHead head =
      rsl::api::ParseHead(std::string_view(raw).substr(0, end), kMaxBody, &req);
  if (head.refuse != 0) {
    if (!KnownStatus(head.refuse) || head.error.code.empty() || head.error.message.empty()) {
      std::abort();
    }
    return 0;
  }
  req.body = raw.substr(end, head.body_len);
  if (caller >= 1 && caller <= 3) {
    req.headers.emplace_back("authorization", "Bearer " + world->token[caller]);
  } else if (caller == 4) {
    auto cert = std::make_shared<rsl::api::ClientCertificate>();
    cert->common_name = req.Header("x-cn");
    for (const auto& o : rsl::Split(req.Header("x-o"), ',')) cert->organizations.push_back(o);
    cert->fingerprint = "AB:CD:EF:01:23:45:67:89";
    req.client_cert = cert;
  }

  rsl::api::HttpResponse res;
  world->router->Dispatch(req, res);
  if (!KnownStatus(res.status)) {
    std::fprintf(stderr, "unexpected status %d\n", res.status);
    std::abort();
  }
  if (res.stream) {
    std::string out;
    for (int i = 0; i < kStreamPieces; ++i) {
      if (res.stream->Next(64 << 10, &out) == rsl::api::StreamSource::State::kDone) break;
    }
    return 0;
  }
  if (rsl::StartsWith(res.content_type, "application/json")) {
    Json j = Json::parse(res.body, nullptr, false);
    if (j.is_discarded()) std::abort();
    if (res.status >= 400 && (!j.contains("code") || !j.contains("message"))) std::abort();
  }
  return 0;
}
