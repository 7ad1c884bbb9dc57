#include "data/scan.h"

#include <algorithm>
#include <map>

#include "base/strings.h"
#include "data/format.h"
#include "data/quality.h"

namespace rsl::data {

Result<std::vector<DatasetInfo>> ScanDatasets(const std::string& uri, Catalog* catalog) {
  auto storage = OpenStorage(uri, catalog);
  if (!storage.ok()) return storage.error();
  auto files = (*storage)->List(uri);
  if (!files.ok()) return files.error();
  std::map<std::string, DatasetInfo> sets;
  std::map<std::string, std::string> first_file;
  for (const auto& f : *files) {
    // The data set is the folder above the first key=value folder, else the file's folder.
    auto parts = Split(f.relative, '/');
    std::vector<std::string> root;
    std::vector<std::string> keys;
    for (size_t i = 0; i + 1 < parts.size(); i++) {
      size_t eq = parts[i].find('=');
      if (eq != std::string::npos && eq > 0) {
        for (size_t k = i; k + 1 < parts.size(); k++) {
          size_t e = parts[k].find('=');
          if (e != std::string::npos && e > 0) keys.push_back(parts[k].substr(0, e));
        }
        break;
      }
      root.push_back(parts[i]);
    }
    std::string set_uri = root.empty() ? uri : JoinUri(uri, Join(root, "/"));
    DatasetInfo& d = sets[set_uri];
    d.uri = set_uri;
    d.files++;
    d.bytes += f.size;
    for (const auto& k : keys) {
      if (std::find(d.partition_keys.begin(), d.partition_keys.end(), k) ==
          d.partition_keys.end()) {
        d.partition_keys.push_back(k);
      }
    }
    if (!first_file.count(set_uri)) first_file[set_uri] = f.uri;
  }
  std::vector<DatasetInfo> out;
  for (auto& [set_uri, d] : sets) {
    const std::string& file = first_file[set_uri];
    auto blob = (*storage)->ReadAll(file);
    if (!blob.ok()) {
      d.error = blob.error().message;
    } else {
      auto format = DetectFormat("", file, (*blob)->data());
      if (!format.ok()) {
        d.error = format.error().message;
      } else {
        d.format = FormatName(*format);
        auto reader = OpenReader(*format, *blob, file);
        if (reader.ok())
          d.schema_json = (*reader)->writer_schema().ToJson();
        else
          d.error = reader.error().message;
      }
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace rsl::data
