// Remote storage drivers: S3 (AWS Signature V4 over libcurl; Ceph's RADOS Gateway speaks the
// same protocol) and HDFS through WebHDFS REST. Open them through OpenStorage() (storage.h).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "data/catalog.h"
#include "data/storage.h"

namespace rsl::data {

struct S3Config {
  std::string endpoint;  //!< http(s)://host[:port]
  std::string region = "us-east-1";
  std::string access_key;
  std::string secret_key;
  bool path_style = true;  //!< http://host/bucket/key; false: http://bucket.host/key
  int max_retries = 4;     //!< on 5xx, 429 and transport errors, with exponential backoff
  int64_t multipart_threshold = 16ll << 20;  //!< objects larger than this use multipart
  int64_t part_size = 8ll << 20;             //!< S3's minimum part is 5 MiB
  int connect_timeout_ms = 3000;
  int request_timeout_ms = 120000;
};

S3Config S3ConfigFrom(const Datasource& ds);
//! AWS_ENDPOINT_URL (default https://s3.<region>.amazonaws.com), AWS_REGION,
//! AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY; missing keys: DATA_SOURCE_UNREACHABLE.
Result<S3Config> S3ConfigFromEnv();
//! `scheme` is the URI scheme served ("s3" or "ceph"): URIs are scheme://bucket/key.
std::unique_ptr<Storage> NewS3Storage(const S3Config& config, const std::string& scheme);

//! Creates a bucket (an existing one is fine): tests and `seedctl` demos.
Status S3CreateBucket(const S3Config& config, const std::string& bucket);
//! One authenticated request: lists `bucket` (or all buckets when empty).
Result<std::string> S3Ping(const S3Config& config, const std::string& bucket);

//! WebHDFS against the datasource's namenodes (tried in order: HA fail-over).
std::unique_ptr<Storage> NewWebHdfsStorage(const Datasource& ds);

//! Reachability and credentials of a datasource: a cheap authenticated request (local: the
//! directory is readable; s3/ceph: list the bucket or the buckets; hdfs: GETFILESTATUS /).
//! Returns a short description ("3 buckets", "directory /data", "namenode ns1:9870").
//! Errors: DATA_SOURCE_UNREACHABLE naming the endpoint, never the credentials.
Result<std::string> TestDatasource(const Datasource& ds);
//! The URI of `path` below a datasource: local: <authority><path>; hdfs: hdfs://<nameservice>
//! <path>; s3/ceph: <kind>://<bucket><path> (the bucket is --bucket or the path's first part).
Result<std::string> DatasourceUri(const Datasource& ds, const std::string& path);

//! AWS Signature V4 for one request, exposed for tests (the AWS documentation's examples).
//! `headers` must include host and x-amz-date and x-amz-content-sha256; returns the
//! Authorization header value.
struct SigV4Request {
  std::string method;
  std::string canonical_uri;                                 //!< already URI-encoded path
  std::string canonical_query;                               //!< sorted, encoded "a=1&b=2"
  std::vector<std::pair<std::string, std::string>> headers;  //!< lower-case names
  std::string payload_sha256;
};
std::string SigV4Authorization(const SigV4Request& req, const std::string& access_key,
                               const std::string& secret_key, const std::string& region,
                               const std::string& amz_date /* 20130524T000000Z */);
//! RFC 3986 encoding as S3 wants it; '/' kept when `keep_slash`.
std::string UriEncode(std::string_view s, bool keep_slash);

}  // namespace rsl::data
