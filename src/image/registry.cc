#include "image/registry.h"

#include <nlohmann/json.hpp>

#include "base/codes.h"
#include "base/sha256.h"
#include "base/strings.h"

namespace rsl::image {
namespace {

using nlohmann::json;

constexpr long kUnauthorized = 401;
constexpr long kOk = 200;
constexpr size_t kMaxManifestBytes = 4 << 20;  // the distribution spec's limit for manifests

Error NotFound(const Reference& ref, const std::string& why) {
  return Error(codes::kImageNotFound, "image " + Quote(ref.ToString()) + ": " + why)
      .Value(ref.ToString());
}

std::string UrlEncode(std::string_view s) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  return out;
}

// "404: MANIFEST_UNKNOWN manifest unknown {"Tag":"v9"}" from the registry's error body, or
// the start of the body when it is not the distribution API's error format.
std::string RegistryAnswer(const HttpResponse& r) {
  std::string out = "registry answered " + std::to_string(r.status);
  auto body = json::parse(r.body, nullptr, false);
  if (body.is_object() && body.contains("errors") && body["errors"].is_array()) {
    for (const auto& e : body["errors"]) {
      if (!e.is_object()) continue;
      out += ": " + e.value("code", std::string()) + " " + e.value("message", std::string());
      if (e.contains("detail") && !e["detail"].is_null()) out += " " + e["detail"].dump();
    }
    return out;
  }
  constexpr size_t kMaxBody = 200;
  std::string text(Trim(r.body.substr(0, kMaxBody)));
  if (!text.empty()) out += ": " + text;
  return out;
}

std::string Digest(std::string_view bytes) { return "sha256:" + Sha256Hex(bytes); }

Descriptor ReadDescriptor(const json& j) {
  Descriptor d;
  if (!j.is_object()) return d;
  d.media_type = j.value("mediaType", std::string());
  d.digest = j.value("digest", std::string());
  if (j.contains("size") && j["size"].is_number_integer()) d.size = j["size"].get<int64_t>();
  return d;
}

bool IsIndex(const std::string& media_type, const json& body) {
  if (media_type == kOciIndex || media_type == kDockerManifestList) return true;
  return media_type.empty() && body.contains("manifests");
}

}  // namespace

int64_t ResolvedImage::Size() const {
  int64_t total = config.size;
  for (const auto& l : layers) total += l.size;
  return total;
}

std::string Base64(std::string_view bytes) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t n = (static_cast<uint8_t>(bytes[i]) << 16) |
                 (static_cast<uint8_t>(bytes[i + 1]) << 8) | static_cast<uint8_t>(bytes[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  if (i < bytes.size()) {
    uint32_t n = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) n |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

Challenge ParseChallenge(const std::string& header) {
  Challenge c;
  std::string_view h = Trim(header);
  size_t space = h.find(' ');
  c.scheme = ToLower(h.substr(0, space));
  if (space == std::string_view::npos) return c;
  std::string_view rest = h.substr(space + 1);
  size_t i = 0;
  while (i < rest.size()) {
    while (i < rest.size() && (rest[i] == ' ' || rest[i] == ',')) ++i;
    size_t eq = rest.find('=', i);
    if (eq == std::string_view::npos) break;
    std::string key = ToLower(Trim(rest.substr(i, eq - i)));
    i = eq + 1;
    std::string value;
    if (i < rest.size() && rest[i] == '"') {
      ++i;
      while (i < rest.size() && rest[i] != '"') {
        if (rest[i] == '\\' && i + 1 < rest.size()) ++i;
        value += rest[i++];
      }
      ++i;  // the closing quote
    } else {
      while (i < rest.size() && rest[i] != ',') value += rest[i++];
      value = std::string(Trim(value));
    }
    c.params[key] = value;
  }
  return c;
}

RegistryClient::RegistryClient(RegistryOptions options) : options_(std::move(options)) {}

Status RegistryClient::Authenticate(const Reference& ref, const std::string& header) {
  Challenge c = ParseChallenge(header);
  auto creds = options_.credentials.find(ref.registry);
  bool have_creds = creds != options_.credentials.end();
  std::string basic =
      have_creds ? "Basic " + Base64(creds->second.username + ":" + creds->second.password) : "";
  std::string key = ref.Name();
  if (c.scheme == "basic") {
    if (!have_creds) {
      return NotFound(ref, "the registry asks for a user name and password (Basic auth)")
          .Hint("give credentials: --username USER --password-stdin");
    }
    auth_[key] = "Authorization: " + basic;
    return Status::Ok();
  }
  if (c.scheme != "bearer" || c.params["realm"].empty()) {
    return NotFound(ref, "the registry asks for an unsupported authentication " +
                             Quote(Trim(header).substr(0, 80)));
  }
  std::string url = c.params["realm"];
  url += url.find('?') == std::string::npos ? "?" : "&";
  if (!c.params["service"].empty()) url += "service=" + UrlEncode(c.params["service"]) + "&";
  url += "scope=" + UrlEncode("repository:" + ref.repository + ":pull");
  HttpRequest req;
  req.url = url;
  req.connect_timeout_ms = options_.connect_timeout_ms;
  req.timeout_ms = options_.timeout_ms;
  if (have_creds) req.headers.push_back("Authorization: " + basic);
  std::string transport;
  auto r = HttpSend(req, &transport);
  if (!r.ok()) {
    return NotFound(
        ref, "cannot reach the token service " + RedactUrl(c.params["realm"]) + ": " + transport);
  }
  if (r->status != kOk) {
    return NotFound(ref, "the token service " + RedactUrl(c.params["realm"]) +
                             " refused: " + RegistryAnswer(*r))
        .Hint(have_creds ? "check the user name and password"
                         : "give credentials: --username USER --password-stdin");
  }
  auto body = json::parse(r->body, nullptr, false);
  std::string token;
  if (body.is_object()) {
    token = body.value("token", std::string());
    if (token.empty()) token = body.value("access_token", std::string());
  }
  if (token.empty()) {
    return NotFound(
        ref, "the token service " + RedactUrl(c.params["realm"]) + " answered without a token");
  }
  auth_[key] = "Authorization: Bearer " + token;
  return Status::Ok();
}

Result<HttpResponse> RegistryClient::Get(const Reference& ref, const std::string& what,
                                         const std::vector<std::string>& accept, bool follow) {
  HttpRequest req;
  req.url = ref.BaseUrl() + "/v2/" + ref.repository + "/" + what;
  req.connect_timeout_ms = options_.connect_timeout_ms;
  req.timeout_ms = options_.timeout_ms;
  req.follow_redirects = follow;
  if (!accept.empty()) req.headers.push_back("Accept: " + Join(accept, ", "));
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::vector<std::string> headers = req.headers;
    auto auth = auth_.find(ref.Name());
    if (auth != auth_.end()) headers.push_back(auth->second);
    HttpRequest sent = req;
    sent.headers = headers;
    std::string transport;
    auto r = HttpSend(sent, &transport);
    if (!r.ok()) {
      return NotFound(ref, "cannot reach registry " + ref.BaseUrl() + ": " + transport)
          .Hint(ref.plain_http ? "is the registry running on that port?"
                               : "check the host name; a registry without TLS must be marked "
                                 "insecure (--insecure-registry " +
                                     ref.registry + ")");
    }
    if (r->status != kUnauthorized || attempt == 1) return r;
    auto challenge = r->headers.find("www-authenticate");
    if (challenge == r->headers.end()) return r;
    RSL_RETURN_IF_ERROR(Authenticate(ref, challenge->second));
  }
  return NotFound(ref, "unreachable");  // not reached: the loop returns
}

Result<HttpResponse> RegistryClient::FetchManifest(const Reference& ref,
                                                   const std::string& manifest_ref,
                                                   const std::string& expected_digest) {
  auto r = Get(ref, "manifests/" + manifest_ref,
               {kOciIndex, kOciManifest, kDockerManifestList, kDockerManifest}, false);
  if (!r.ok()) return r;
  if (r->status != kOk) {
    Error e = NotFound(ref, RegistryAnswer(*r));
    if (r->status == kUnauthorized || r->status == 403) {
      e.Hint("check the credentials (--username USER --password-stdin)");
    } else {
      e.Hint("check the name and tag; the registry lists tags at " + ref.BaseUrl() + "/v2/" +
             ref.repository + "/tags/list");
    }
    return e;
  }
  if (r->body.size() > kMaxManifestBytes) return NotFound(ref, "manifest larger than 4 MiB");
  if (!expected_digest.empty() && Digest(r->body) != expected_digest) {
    return NotFound(ref, "the manifest fetched for " + expected_digest + " has digest " +
                             Digest(r->body))
        .Hint("the registry returned different content for a digest: do not trust it");
  }
  return r;
}

Result<ResolvedImage> RegistryClient::Resolve(const Reference& ref) {
  ResolvedImage out;
  out.reference = ref;
  auto top = FetchManifest(ref, ref.ManifestRef(), ref.digest);
  if (!top.ok()) return top.error();
  HttpResponse manifest = std::move(top).value();
  auto body = json::parse(manifest.body, nullptr, false);
  if (!body.is_object()) return NotFound(ref, "the registry's manifest is not a JSON object");
  std::string media_type = body.value("mediaType", std::string());
  if (media_type.empty()) {
    auto ct = manifest.headers.find("content-type");
    if (ct != manifest.headers.end()) media_type = std::string(Trim(Split(ct->second, ';')[0]));
  }
  if (IsIndex(media_type, body)) {
    out.index_digest = Digest(manifest.body);
    out.index_media_type = media_type.empty() ? kOciIndex : media_type;
    std::string want = options_.os + "/" + options_.architecture;
    std::vector<std::string> have;
    Descriptor chosen;
    if (body.contains("manifests") && body["manifests"].is_array()) {
      for (const auto& m : body["manifests"]) {
        if (!m.is_object() || !m.contains("platform") || !m["platform"].is_object()) continue;
        std::string p = m["platform"].value("os", std::string()) + "/" +
                        m["platform"].value("architecture", std::string());
        have.push_back(p);
        if (p == want && chosen.digest.empty()) chosen = ReadDescriptor(m);
      }
    }
    if (chosen.digest.empty()) {
      return NotFound(ref, "no " + want + " image in its index (it has " +
                               (have.empty() ? std::string("none") : Join(have, ", ")) + ")")
          .Hint("build and push the image for " + want);
    }
    auto platform = FetchManifest(ref, chosen.digest, chosen.digest);
    if (!platform.ok()) return platform.error();
    manifest = std::move(platform).value();
    body = json::parse(manifest.body, nullptr, false);
    if (!body.is_object()) return NotFound(ref, "the registry's manifest is not a JSON object");
    media_type = body.value("mediaType", chosen.media_type);
    if (IsIndex(media_type, body)) return NotFound(ref, "an index points to another index");
  }
  out.digest = Digest(manifest.body);
  out.media_type = media_type.empty() ? kOciManifest : media_type;
  out.manifest_size = static_cast<int64_t>(manifest.body.size());
  if (!body.contains("config") || !body.contains("layers") || !body["layers"].is_array()) {
    return NotFound(ref, "the manifest (" + out.media_type +
                             ") has no config and layers: not an image manifest");
  }
  out.config = ReadDescriptor(body["config"]);
  for (const auto& l : body["layers"]) out.layers.push_back(ReadDescriptor(l));
  auto config = FetchBlob(ref, out.config.digest);
  if (!config.ok()) return config.error();
  auto cfg = json::parse(*config, nullptr, false);
  if (cfg.is_object()) {
    out.platform = cfg.value("os", std::string()) + "/" + cfg.value("architecture", std::string());
  }
  std::string want = options_.os + "/" + options_.architecture;
  if (out.platform != want) {
    return NotFound(ref, "the image is for " + out.platform + ", not " + want)
        .Hint("build and push the image for " + want);
  }
  return out;
}

Result<std::string> RegistryClient::FetchBlob(const Reference& ref, const std::string& digest) {
  auto r = Get(ref, "blobs/" + digest, {}, true);
  if (!r.ok()) return r.error();
  if (r->status != kOk) return NotFound(ref, "blob " + digest + ": " + RegistryAnswer(*r));
  if (Digest(r->body) != digest) {
    return NotFound(ref, "blob " + digest + " has digest " + Digest(r->body));
  }
  return std::move(r->body);
}

}  // namespace rsl::image
