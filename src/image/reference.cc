#include "image/reference.h"

#include "base/codes.h"
#include "base/strings.h"

namespace rsl::image {
namespace {

constexpr size_t kMaxNameLength = 255;
constexpr size_t kMaxTagLength = 128;
constexpr size_t kSha256HexLength = 64;
constexpr char kOfficialPrefix[] = "library/";
constexpr char kLegacyHub[] = "index.docker.io";
constexpr char kHint[] =
    "write [registry/]name[:tag][@sha256:digest] in lower case, e.g. "
    "docker.io/library/python:3.11 or 127.0.0.1:5000/volc/train:v2";

bool Lower(char c) { return c >= 'a' && c <= 'z'; }
bool Upper(char c) { return c >= 'A' && c <= 'Z'; }
bool Digit(char c) { return c >= '0' && c <= '9'; }
bool Alnum(char c) { return Lower(c) || Upper(c) || Digit(c); }
bool Word(char c) { return Alnum(c) || c == '_'; }
bool HexLower(char c) { return Digit(c) || (c >= 'a' && c <= 'f'); }

Error Bad(const std::string& ref, const std::string& why) {
  return Error(codes::kImageReferenceInvalid, "image reference " + Quote(ref) + " " + why)
      .Value(ref)
      .Hint(kHint);
}

// path-component: [a-z0-9]+ ((\.|_|__|-+)[a-z0-9]+)*
bool PathComponent(const std::string& s) {
  auto alnum = [](char c) { return Lower(c) || Digit(c); };
  size_t i = 0;
  while (true) {
    size_t start = i;
    while (i < s.size() && alnum(s[i])) ++i;
    if (i == start) return false;
    if (i == s.size()) return true;
    if (s[i] == '.') {
      ++i;
    } else if (s[i] == '_') {
      ++i;
      if (i < s.size() && s[i] == '_') ++i;
    } else if (s[i] == '-') {
      while (i < s.size() && s[i] == '-') ++i;
    } else {
      return false;
    }
  }
}

// domain: domain-component (\. domain-component)* (:port)?, or an IPv6 address in brackets.
bool Domain(const std::string& s) {
  std::string host = s;
  if (!host.empty() && host.front() == '[') {
    size_t close = host.find(']');
    if (close == std::string::npos || close == 1) return false;
    for (size_t i = 1; i < close; ++i) {
      char c = host[i];
      if (!(Digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':')) {
        return false;
      }
    }
    host = host.substr(close + 1);
    if (host.empty()) return true;
    if (host.front() != ':') return false;
    host = "x" + host;  // only the port is left to check
  }
  size_t colon = host.find(':');
  if (colon != std::string::npos) {
    std::string port = host.substr(colon + 1);
    if (port.empty()) return false;
    for (char c : port) {
      if (!Digit(c)) return false;
    }
    host = host.substr(0, colon);
  }
  if (host.empty()) return false;
  for (const auto& part : Split(host, '.')) {
    if (part.empty() || !Alnum(part.front()) || !Alnum(part.back())) return false;
    for (char c : part) {
      if (!Alnum(c) && c != '-') return false;
    }
  }
  return true;
}

// Returns "" or why the digest is bad. Only sha256 is supported (what registries use).
std::string CheckDigest(const std::string& d) {
  size_t colon = d.find(':');
  if (colon == std::string::npos || colon == 0) return "has a digest without an algorithm";
  std::string algorithm = d.substr(0, colon);
  std::string hex = d.substr(colon + 1);
  if (algorithm != "sha256") {
    return "has an unsupported digest algorithm " + Quote(algorithm) + " (only sha256)";
  }
  if (hex.size() != kSha256HexLength) {
    return "has a sha256 digest of " + std::to_string(hex.size()) + " hex digits, not 64";
  }
  for (char c : hex) {
    if (!HexLower(c)) return "has a digest that is not lower-case hex";
  }
  return "";
}

bool AllHex64(const std::string& s) {
  if (s.size() != kSha256HexLength) return false;
  for (char c : s) {
    if (!HexLower(c)) return false;
  }
  return true;
}

}  // namespace

std::string Reference::Name() const { return registry + "/" + repository; }

std::string Reference::ToString() const {
  std::string out = Name();
  if (!tag.empty()) out += ":" + tag;
  if (!digest.empty()) out += "@" + digest;
  return out;
}

std::string Reference::BaseUrl() const {
  std::string host = registry == kDockerHub ? std::string(kDockerHubApiHost) : registry;
  return (plain_http ? "http://" : "https://") + host;
}

bool IsLoopbackRegistry(const std::string& registry) {
  std::string host = registry;
  if (!host.empty() && host.front() == '[') {
    size_t close = host.find(']');
    return close != std::string::npos && host.substr(1, close - 1) == "::1";
  }
  size_t colon = host.find(':');
  if (colon != std::string::npos) host = host.substr(0, colon);
  if (ToLower(host) == "localhost") return true;
  std::vector<std::string> octets = Split(host, '.');
  if (octets.size() != 4 || octets[0] != "127") return false;
  for (const auto& o : octets) {
    if (o.empty() || o.size() > 3) return false;
    for (char c : o) {
      if (!Digit(c)) return false;
    }
    if (std::stoi(o) > 255) return false;
  }
  return true;
}

Result<Reference> ParseReference(const std::string& ref, const ParseOptions& options) {
  if (ref.empty()) return Bad(ref, "is empty");
  if (AllHex64(ref)) {
    return Bad(ref, "is a 64-digit hex string, which cannot be a repository name")
        .Hint("to pin an image by digest write name@sha256:" + ref);
  }
  Reference out;
  std::string rest = ref;
  size_t at = rest.find('@');
  if (at != std::string::npos) {
    out.digest = rest.substr(at + 1);
    std::string why = CheckDigest(out.digest);
    if (!why.empty()) return Bad(ref, why);
    rest = rest.substr(0, at);
  }
  // A tag follows the last ':' that comes after the last '/'.
  size_t slash = rest.rfind('/');
  size_t colon = rest.rfind(':');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    out.tag = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    if (out.tag.empty()) return Bad(ref, "has an empty tag after ':'");
    if (out.tag.size() > kMaxTagLength) return Bad(ref, "has a tag longer than 128 characters");
    if (!Word(out.tag.front()))
      return Bad(ref, "has a tag that starts with neither a letter, digit nor '_'");
    for (char c : out.tag) {
      if (!(Word(c) || c == '.' || c == '-')) {
        return Bad(ref, "has a tag " + Quote(out.tag) +
                            " with characters other than letters, digits, '_', '.' and '-'");
      }
    }
  }
  if (rest.empty()) return Bad(ref, "has no repository name");
  // Docker's rule: the part before the first '/' is a registry when it has a '.' or a ':', is
  // "localhost", or has an upper-case letter; otherwise the name is on Docker Hub.
  size_t first = rest.find('/');
  std::string remainder = rest;
  out.registry = kDockerHub;
  if (first != std::string::npos) {
    std::string head = rest.substr(0, first);
    if (head.find_first_of(".:") != std::string::npos || head == "localhost" ||
        ToLower(head) != head) {
      out.registry = head;
      remainder = rest.substr(first + 1);
    }
  }
  if (out.registry == kLegacyHub) out.registry = kDockerHub;
  if (out.registry == kDockerHub && remainder.find('/') == std::string::npos) {
    remainder = kOfficialPrefix + remainder;
  }
  if (ToLower(remainder) != remainder)
    return Bad(ref, "has a repository name that is not lower case");
  if (!Domain(out.registry)) return Bad(ref, "has an invalid registry host " + Quote(out.registry));
  for (const auto& part : Split(remainder, '/')) {
    if (!PathComponent(part)) {
      return Bad(ref, "has an invalid name component " + Quote(part) +
                          " (lower-case letters and digits, separated by '.', '_', '__' or '-')");
    }
  }
  out.repository = remainder;
  if (out.Name().size() > kMaxNameLength) {
    return Bad(ref, "has a name longer than 255 characters");
  }
  if (out.tag.empty() && out.digest.empty()) out.tag = "latest";
  out.plain_http = IsLoopbackRegistry(out.registry);
  for (const auto& r : options.insecure_registries) {
    if (r == out.registry) out.plain_http = true;
  }
  return out;
}

}  // namespace rsl::image
