#include "base/codes.h"
#include "data/remote.h"

namespace rsl::data {

std::unique_ptr<Storage> NewWebHdfsStorage(const Datasource& ds) { return nullptr; }

}  // namespace rsl::data
