// `datasource scan`: what data sets live under a URI and a schema template for each, as seed
// 000 §4.1 step 2 describes (list, sample, infer).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "data/catalog.h"

namespace rsl::data {

struct DatasetInfo {
  std::string uri;     //!< the data set's root (above its partitions)
  std::string format;  //!< of its first file
  int64_t files = 0;
  int64_t bytes = 0;
  std::vector<std::string> partition_keys;  //!< Hive-style keys, outermost first
  std::string schema_json;                  //!< inferred writer schema (Avro JSON) or ""
  std::string error;                        //!< why no schema could be inferred
};

//! Groups the files below `uri` into data sets (a folder of files, with Hive partitions
//! folded in) and infers each one's schema from its first file.
Result<std::vector<DatasetInfo>> ScanDatasets(const std::string& uri, Catalog* catalog);

}  // namespace rsl::data
