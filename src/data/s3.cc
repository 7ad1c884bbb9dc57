// The S3 driver: AWS Signature V4 (OpenSSL HMAC-SHA256) over libcurl, path-style or
// virtual-host addressing, ListObjectsV2 paging, ranged GETs, multipart upload above a size
// threshold, retries with exponential backoff on 5xx, 429 and transport errors. Ceph's RADOS
// Gateway speaks the same protocol (ceph:// URIs).
#include <openssl/hmac.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <thread>

#include "base/codes.h"
#include "base/http_client.h"
#include "base/sha256.h"
#include "base/strings.h"
#include "data/format.h"
#include "data/remote.h"

namespace rsl::data {
namespace {

constexpr int kBaseBackoffMs = 100;

std::string Hmac(const std::string& key, const std::string& msg) {
  unsigned char out[32];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

using Response = HttpResponse;

std::string XmlUnescape(std::string s) {
  static const std::pair<const char*, const char*> kEntities[] = {
      {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}, {"&amp;", "&"}};
  for (const auto& [from, to] : kEntities) {
    for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += std::strlen(to)) {
      s.replace(at, std::strlen(from), to);
    }
  }
  return s;
}

// Every <tag>value</tag> in xml (flat: S3's list responses nest one level).
std::vector<std::string> XmlAll(const std::string& xml, const std::string& tag) {
  std::vector<std::string> out;
  std::string open = "<" + tag + ">", close = "</" + tag + ">";
  for (size_t at = 0; (at = xml.find(open, at)) != std::string::npos;) {
    size_t end = xml.find(close, at);
    if (end == std::string::npos) break;
    out.push_back(XmlUnescape(xml.substr(at + open.size(), end - at - open.size())));
    at = end + close.size();
  }
  return out;
}

std::string XmlFirst(const std::string& xml, const std::string& tag) {
  auto all = XmlAll(xml, tag);
  return all.empty() ? "" : all.front();
}

int64_t ParseHttpDateMs(const std::string& s) {
  std::tm tm{};
  if (strptime(s.c_str(), "%a, %d %b %Y %H:%M:%S", &tm) == nullptr) return 0;
  return static_cast<int64_t>(timegm(&tm)) * 1000;
}

class S3Storage : public Storage {
 public:
  S3Storage(S3Config c, std::string scheme) : c_(std::move(c)), scheme_(std::move(scheme)) {
    while (!c_.endpoint.empty() && c_.endpoint.back() == '/') c_.endpoint.pop_back();
  }

  Result<ObjectInfo> Stat(const std::string& uri) override {
    auto u = Split(uri);
    if (!u.ok()) return u.error();
    auto [bucket, key] = *u;
    if (!key.empty() && key.back() != '/') {
      auto r = Send("HEAD", bucket, key, {}, "", {});
      if (!r.ok()) return r.error();
      if (r->status == 200) {
        ObjectInfo info;
        info.uri = uri;
        info.size = std::atoll(r->headers["content-length"].c_str());
        info.mtime_ms = ParseHttpDateMs(r->headers["last-modified"]);
        info.etag = r->headers["etag"];
        return info;
      }
      if (r->status != 404) return HttpError(*r, uri);
    }
    std::map<std::string, std::string> q = {
        {"list-type", "2"}, {"max-keys", "1"}, {"prefix", DirPrefix(key)}};
    auto r = Send("GET", bucket, "", q, "", {});
    if (!r.ok()) return r.error();
    if (r->status != 200) return HttpError(*r, uri);
    if (XmlAll(r->body, "Key").empty()) {
      return Error(codes::kDataSourceNotFound, "no such object or prefix: " + uri).Value(uri);
    }
    ObjectInfo info;
    info.uri = uri;
    info.is_dir = true;
    return info;
  }

  Status ListBelow(const std::string& uri, std::vector<ObjectInfo>* out) override {
    auto u = Split(uri);
    auto [bucket, key] = *u;
    std::string prefix = DirPrefix(key);
    std::string token;
    std::string base = scheme_ + "://" + bucket + "/";
    while (true) {
      std::map<std::string, std::string> q = {{"list-type", "2"}, {"prefix", prefix}};
      if (!token.empty()) q["continuation-token"] = token;
      auto r = Send("GET", bucket, "", q, "", {});
      if (!r.ok()) return r.error();
      if (r->status != 200) return HttpError(*r, uri);
      for (const auto& item : XmlAll(r->body, "Contents")) {
        ObjectInfo info;
        std::string k = XmlFirst(item, "Key");
        info.relative = k.substr(prefix.size());
        if (info.relative.empty() || Hidden(info.relative)) continue;
        info.uri = base + k;
        info.size = std::atoll(XmlFirst(item, "Size").c_str());
        info.etag = XmlFirst(item, "ETag");
        int64_t micros = 0;
        if (ParseTimestampMicros(XmlFirst(item, "LastModified"), &micros))
          info.mtime_ms = micros / 1000;
        info.partitions = HivePartitions(info.relative);
        out->push_back(std::move(info));
      }
      if (XmlFirst(r->body, "IsTruncated") != "true") break;
      token = XmlFirst(r->body, "NextContinuationToken");
      if (token.empty()) break;
    }
    return Status::Ok();
  }

  Result<std::string> ReadRange(const std::string& uri, int64_t offset, int64_t length) override {
    auto u = Split(uri);
    if (!u.ok()) return u.error();
    if (length <= 0) return std::string();
    std::vector<std::string> h = {"Range: bytes=" + std::to_string(offset) + "-" +
                                  std::to_string(offset + length - 1)};
    auto r = Send("GET", u->first, u->second, {}, "", h);
    if (!r.ok()) return r.error();
    if (r->status == 416) return std::string();
    if (r->status != 200 && r->status != 206) return HttpError(*r, uri);
    return std::move(r->body);
  }

  Result<std::shared_ptr<const Blob>> ReadAll(const std::string& uri) override {
    auto u = Split(uri);
    if (!u.ok()) return u.error();
    auto r = Send("GET", u->first, u->second, {}, "", {});
    if (!r.ok()) return r.error();
    if (r->status != 200) return HttpError(*r, uri);
    return MakeBlob(std::move(r->body));
  }

  Status Write(const std::string& uri, std::string_view bytes) override {
    auto u = Split(uri);
    if (!u.ok()) return u.status();
    auto [bucket, key] = *u;
    if (static_cast<int64_t>(bytes.size()) <= c_.multipart_threshold) {
      auto r = Send("PUT", bucket, key, {}, std::string(bytes), {});
      if (!r.ok()) return r.status();
      if (r->status != 200) return HttpError(*r, uri);
      return Status::Ok();
    }
    // Multipart: initiate, upload parts, complete (abort on failure).
    auto init = Send("POST", bucket, key, {{"uploads", ""}}, "", {});
    if (!init.ok()) return init.status();
    if (init->status != 200) return HttpError(*init, uri);
    std::string upload = XmlFirst(init->body, "UploadId");
    std::string complete = "<CompleteMultipartUpload>";
    int part = 1;
    for (size_t off = 0; off < bytes.size(); off += c_.part_size, part++) {
      std::string chunk(bytes.substr(off, c_.part_size));
      auto r = Send("PUT", bucket, key,
                    {{"partNumber", std::to_string(part)}, {"uploadId", upload}}, chunk, {});
      if (!r.ok() || r->status != 200) {
        (void)Send("DELETE", bucket, key, {{"uploadId", upload}}, "", {});
        return r.ok() ? Status(HttpError(*r, uri)) : r.status();
      }
      complete += "<Part><PartNumber>" + std::to_string(part) + "</PartNumber><ETag>" +
                  r->headers["etag"] + "</ETag></Part>";
    }
    complete += "</CompleteMultipartUpload>";
    auto done = Send("POST", bucket, key, {{"uploadId", upload}}, complete, {});
    if (!done.ok()) return done.status();
    if (done->status != 200 || done->body.find("<Error>") != std::string::npos) {
      (void)Send("DELETE", bucket, key, {{"uploadId", upload}}, "", {});
      return HttpError(*done, uri);
    }
    return Status::Ok();
  }

  Result<TaggedObject> ReadTagged(const std::string& uri) override {
    auto u = Split(uri);
    if (!u.ok()) return u.error();
    auto r = Send("GET", u->first, u->second, {}, "", {});
    if (!r.ok()) return r.error();
    if (r->status != 200) return HttpError(*r, uri);
    return TaggedObject{std::move(r->body), r->headers["etag"]};
  }

  Result<std::string> WriteIf(const std::string& uri, std::string_view bytes,
                              const std::string& if_match) override {
    auto u = Split(uri);
    if (!u.ok()) return u.error();
    // The ETag unquoted: radosgw 16 compares If-Match byte for byte with the ETag it stored,
    // which has no quotes (a quoted one never matches); AWS S3 takes it either way.
    std::string etag = if_match;
    if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"')
      etag = etag.substr(1, etag.size() - 2);
    std::string condition = if_match.empty() ? "If-None-Match: *" : "If-Match: " + etag;
    auto r = Send("PUT", u->first, u->second, {}, std::string(bytes), {condition});
    if (!r.ok()) return r.error();
    // 412: the condition does not hold. 404 answers an If-Match on a missing object on
    // some servers; 409 (ConditionalRequestConflict) a conditional write racing another.
    if (r->status == 412 || r->status == 409 || (r->status == 404 && !if_match.empty())) {
      return Error(codes::kConflict, "HTTP " + std::to_string(r->status) + " (" + condition +
                                         ") from " + c_.endpoint + " for " + uri)
          .Value(uri);
    }
    if (r->status != 200) return HttpError(*r, uri);
    return r->headers["etag"];
  }

  Status Delete(const std::string& uri) override {
    auto u = Split(uri);
    if (!u.ok()) return u.status();
    auto [bucket, key] = *u;
    std::vector<std::string> keys;
    if (!key.empty()) keys.push_back(key);
    std::map<std::string, std::string> q = {{"list-type", "2"}, {"prefix", DirPrefix(key)}};
    std::string token;
    while (true) {
      if (!token.empty()) q["continuation-token"] = token;
      auto r = Send("GET", bucket, "", q, "", {});
      if (!r.ok()) return r.status();
      if (r->status == 404) return Status::Ok();
      if (r->status != 200) return HttpError(*r, uri);
      for (const auto& k : XmlAll(r->body, "Key")) keys.push_back(k);
      if (XmlFirst(r->body, "IsTruncated") != "true") break;
      token = XmlFirst(r->body, "NextContinuationToken");
      if (token.empty()) break;
    }
    for (const auto& k : keys) {
      auto r = Send("DELETE", bucket, k, {}, "", {});
      if (!r.ok()) return r.status();
      if (r->status != 204 && r->status != 200 && r->status != 404) return HttpError(*r, uri);
    }
    return Status::Ok();
  }

  Status CreateBucket(const std::string& bucket) {
    auto r = Send("PUT", bucket, "", {}, "", {});
    if (!r.ok()) return r.status();
    if (r->status == 200 || r->status == 409) return Status::Ok();  // 409: already exists
    return HttpError(*r, scheme_ + "://" + bucket);
  }

  Result<std::string> Ping(const std::string& bucket) {
    auto r = bucket.empty()
                 ? Send("GET", "", "", {}, "", {})
                 : Send("GET", bucket, "", {{"list-type", "2"}, {"max-keys", "1"}}, "", {});
    if (!r.ok()) return r.error();
    if (r->status != 200) return HttpError(*r, c_.endpoint);
    if (bucket.empty()) return std::to_string(XmlAll(r->body, "Bucket").size()) + " bucket(s)";
    return "bucket " + bucket + " listed";
  }

 private:
  static bool Hidden(const std::string& rel) {
    for (const auto& part : rsl::Split(rel, '/')) {
      if (!part.empty() && (part[0] == '_' || part[0] == '.')) return true;
    }
    return false;
  }

  static std::string DirPrefix(const std::string& key) {
    if (key.empty() || key.back() == '/') return key;
    return key + "/";
  }

  Result<std::pair<std::string, std::string>> Split(const std::string& uri) const {
    auto u = ParseUri(uri);
    if (!u.ok()) return u.error();
    std::string key = u->path.empty() ? "" : u->path.substr(1);
    return std::make_pair(u->authority, key);
  }

  Error HttpError(const Response& r, const std::string& uri) const {
    std::string code = XmlFirst(r.body, "Code");
    std::string what = "HTTP " + std::to_string(r.status) + (code.empty() ? "" : " " + code);
    if (r.status == 404) {
      return Error(codes::kDataSourceNotFound, what + ": " + uri).Value(uri);
    }
    Error e(codes::kDataSourceUnreachable, what + " from " + c_.endpoint + " for " + uri);
    e.Value(uri);
    if (r.status == 403) e.Hint("check the datasource's access key and secret key");
    return e;
  }

  Result<Response> Send(const std::string& method, const std::string& bucket,
                        const std::string& key, const std::map<std::string, std::string>& query,
                        const std::string& body, const std::vector<std::string>& extra) {
    std::string scheme_host = c_.endpoint;
    size_t sep = scheme_host.find("://");
    std::string proto = scheme_host.substr(0, sep);
    std::string host = scheme_host.substr(sep + 3);
    std::string path;
    if (bucket.empty()) {
      path = "/";
    } else if (c_.path_style) {
      path = "/" + UriEncode(bucket, false) + (key.empty() ? "" : "/" + UriEncode(key, true));
    } else {
      host = bucket + "." + host;
      path = "/" + UriEncode(key, true);
    }
    std::string canonical_query;
    for (const auto& [k, v] : query) {  // std::map: sorted by name
      if (!canonical_query.empty()) canonical_query += "&";
      canonical_query += UriEncode(k, false) + "=" + UriEncode(v, false);
    }
    std::string url =
        proto + "://" + host + path + (canonical_query.empty() ? "" : "?" + canonical_query);
    for (int attempt = 0;; attempt++) {
      std::string date = FormatUtc(std::time(nullptr), "%Y%m%dT%H%M%SZ");
      SigV4Request req;
      req.method = method;
      req.canonical_uri = path;
      req.canonical_query = canonical_query;
      req.payload_sha256 = Sha256Hex(body);
      req.headers = {
          {"host", host}, {"x-amz-content-sha256", req.payload_sha256}, {"x-amz-date", date}};
      std::string auth = SigV4Authorization(req, c_.access_key, c_.secret_key, c_.region, date);
      HttpRequest http;
      http.method = method;
      http.url = url;
      http.headers = {"Authorization: " + auth, "x-amz-date: " + date,
                      "x-amz-content-sha256: " + req.payload_sha256, "Expect:"};
      http.headers.insert(http.headers.end(), extra.begin(), extra.end());
      http.body = body;
      http.connect_timeout_ms = c_.connect_timeout_ms;
      http.timeout_ms = c_.request_timeout_ms;
      std::string curl_error;
      Result<Response> resp = HttpSend(http, &curl_error);
      bool retry = !resp.ok() || resp->status >= 500 || resp->status == 429;
      if (!retry) return resp;
      if (attempt >= c_.max_retries) {
        if (!resp.ok()) {
          return Error(codes::kDataSourceUnreachable,
                       "cannot reach " + c_.endpoint + ": " + curl_error + " (after " +
                           std::to_string(attempt + 1) + " attempts)")
              .Hint("check the endpoint with: seedctl datasource test --name N");
        }
        return resp;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(kBaseBackoffMs << attempt));
    }
  }

  S3Config c_;
  std::string scheme_;
};

}  // namespace

std::string UriEncode(std::string_view s, bool keep_slash) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string SigV4Authorization(const SigV4Request& req, const std::string& access_key,
                               const std::string& secret_key, const std::string& region,
                               const std::string& amz_date) {
  auto headers = req.headers;
  std::sort(headers.begin(), headers.end());
  std::string canonical_headers, signed_headers;
  for (const auto& [k, v] : headers) {
    canonical_headers += k + ":" + std::string(Trim(v)) + "\n";
    signed_headers += (signed_headers.empty() ? "" : ";") + k;
  }
  std::string canonical = req.method + "\n" + req.canonical_uri + "\n" + req.canonical_query +
                          "\n" + canonical_headers + "\n" + signed_headers + "\n" +
                          req.payload_sha256;
  std::string day = amz_date.substr(0, 8);
  std::string scope = day + "/" + region + "/s3/aws4_request";
  std::string to_sign =
      "AWS4-HMAC-SHA256\n" + amz_date + "\n" + scope + "\n" + Sha256Hex(canonical);
  std::string key = Hmac("AWS4" + secret_key, day);
  key = Hmac(key, region);
  key = Hmac(key, "s3");
  key = Hmac(key, "aws4_request");
  return "AWS4-HMAC-SHA256 Credential=" + access_key + "/" + scope +
         ", SignedHeaders=" + signed_headers + ", Signature=" + HexEncode(Hmac(key, to_sign));
}

S3Config S3ConfigFrom(const Datasource& ds) {
  S3Config c;
  c.endpoint = ds.endpoint.empty() ? "https://s3." + ds.region + ".amazonaws.com" : ds.endpoint;
  c.region = ds.region.empty() ? "us-east-1" : ds.region;
  c.access_key = ds.access_key;
  c.secret_key = ds.secret_key;
  c.path_style = ds.path_style;
  return c;
}

Result<S3Config> S3ConfigFromEnv() {
  S3Config c;
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  c.region = env("AWS_REGION").empty() ? "us-east-1" : env("AWS_REGION");
  c.endpoint = env("AWS_ENDPOINT_URL").empty() ? "https://s3." + c.region + ".amazonaws.com"
                                               : env("AWS_ENDPOINT_URL");
  c.access_key = env("AWS_ACCESS_KEY_ID");
  c.secret_key = env("AWS_SECRET_ACCESS_KEY");
  if (c.access_key.empty() || c.secret_key.empty()) {
    return Error(codes::kDataSourceUnreachable,
                 "no s3 datasource is registered and no AWS credentials are set")
        .Hint(
            "seedctl datasource register s3 --name N --access-key K --secret-key S, or set "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
  }
  return c;
}

std::unique_ptr<Storage> NewS3Storage(const S3Config& config, const std::string& scheme) {
  return std::make_unique<S3Storage>(config, scheme);
}

Status S3CreateBucket(const S3Config& config, const std::string& bucket) {
  S3Storage s(config, "s3");
  return s.CreateBucket(bucket);
}

Result<std::string> S3Ping(const S3Config& config, const std::string& bucket) {
  S3Storage s(config, "s3");
  return s.Ping(bucket);
}

}  // namespace rsl::data
