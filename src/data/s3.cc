#include "base/codes.h"
#include "data/remote.h"

namespace rsl::data {

S3Config S3ConfigFrom(const Datasource& ds) { return S3Config{}; }
Result<S3Config> S3ConfigFromEnv() { return Error(codes::kDataSourceUnreachable, "no s3"); }
std::unique_ptr<Storage> NewS3Storage(const S3Config& config, const std::string& scheme) {
  return nullptr;
}

}  // namespace rsl::data
