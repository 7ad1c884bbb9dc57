// Unit tests of the remote drivers that need no server: AWS Signature V4 against the AWS
// documentation's published example, URI encoding, datasource URIs.
#include <gtest/gtest.h>

#include "base/codes.h"
#include "base/sha256.h"
#include "data/remote.h"

namespace rsl::data {
namespace {

// "GET Object" example of the Amazon S3 API reference, "Signature Calculations for the
// Authorization Header: Transferring Payload in a Single Chunk".
TEST(SigV4, MatchesTheAwsDocumentationExample) {
  SigV4Request req;
  req.method = "GET";
  req.canonical_uri = "/test.txt";
  req.payload_sha256 = Sha256Hex("");
  req.headers = {{"host", "examplebucket.s3.amazonaws.com"},
                 {"range", "bytes=0-9"},
                 {"x-amz-content-sha256", req.payload_sha256},
                 {"x-amz-date", "20130524T000000Z"}};
  std::string auth =
      SigV4Authorization(req, "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                         "us-east-1", "20130524T000000Z");
  EXPECT_EQ(auth,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(SigV4, EncodesLikeS3) {
  EXPECT_EQ(UriEncode("a b/c~d=e", true), "a%20b/c~d%3De");
  EXPECT_EQ(UriEncode("a/b", false), "a%2Fb");
}

TEST(Datasources, UrisBelowADatasource) {
  Datasource local;
  local.kind = "local";
  local.authority = "hdfs://ns1";
  EXPECT_EQ(*DatasourceUri(local, "/raw/x"), "hdfs://ns1/raw/x");
  Datasource hdfs;
  hdfs.kind = "hdfs";
  hdfs.namenodes = {"ns1:8020", "ns2:8020"};
  EXPECT_EQ(*DatasourceUri(hdfs, "raw"), "hdfs://ns1/raw");
  Datasource ceph;
  ceph.kind = "ceph";
  EXPECT_EQ(*DatasourceUri(ceph, "/models/fraud"), "ceph://models/fraud");
  EXPECT_FALSE(DatasourceUri(ceph, "/").ok());
  ceph.bucket = "models";
  EXPECT_EQ(*DatasourceUri(ceph, "/fraud"), "ceph://models/fraud");
}

}  // namespace
}  // namespace rsl::data
