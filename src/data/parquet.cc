#include "base/codes.h"
#include "data/format.h"

namespace rsl::data {

Result<std::unique_ptr<FileReader>> OpenParquet(std::shared_ptr<const Blob> blob,
                                                const std::string& name) {
  return FormatError(name, 0, "parquet: not yet");
}

}  // namespace rsl::data
