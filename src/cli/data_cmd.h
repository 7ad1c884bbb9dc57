// seedctl data validate|profile and seedctl datasource register|list|test|scan|remove
// (docs/data.md): the flags of each command and the function that runs it. Every command
// works on a state directory (`state_dir`, "" = $RSL_STATE_DIR, else ~/.local/state/rsl)
// whose database holds the datasource catalog. Functions print to stdout/stderr and end a
// failing command by throwing Exit (cli.h).
#pragma once

#include <string>

#include "data/catalog.h"

namespace rsl::cli {

struct DataValidateFlags {
  std::string file;             //!< an AIWorkload, or a bare `input:` block
  std::string uri;              //!< validates this URI instead of the file's input.uri
  std::string output = "text";  //!< text | json
  std::string state_dir;
  int threads = 0;  //!< 0 = every core
};

//! The input's existence, schema, constraints and quality; exit 1 when a check fails.
void RunDataValidate(const DataValidateFlags& flags);

struct DataProfileFlags {
  std::string uri;
  std::string format;           //!< "" = detect
  std::string output = "text";  //!< text | json
  std::string state_dir;
};

//! Per-field statistics of the data set at `uri`.
void RunDataProfile(const DataProfileFlags& flags);

struct DatasourceRegisterFlags {
  std::string kind;  //!< hdfs | ceph | s3 | local: the subcommand, not a flag
  std::string state_dir;
  data::Datasource datasource;  //!< name and the kind's fields (`kind` is set from above)
  std::string namenodes;        //!< hdfs: comma-separated host:port
  bool replace = false;
  bool virtual_host = false;  //!< ceph, s3: bucket.host addressing
};

//! Stores the datasource in the catalog (a `local` path made absolute first).
void RunDatasourceRegister(const DatasourceRegisterFlags& flags);

struct DatasourceListFlags {
  std::string state_dir;
  std::string output = "text";  //!< text | json
};

//! Every registered datasource, credentials masked.
void RunDatasourceList(const DatasourceListFlags& flags);

//! One datasource by name (test, remove).
struct DatasourceNameFlags {
  std::string name;
  std::string state_dir;
};

//! Reachability, credentials and latency of one datasource.
void RunDatasourceTest(const DatasourceNameFlags& flags);

struct DatasourceScanFlags {
  std::string name;
  std::string path = "/";
  std::string output = "text";  //!< text | json
  std::string state_dir;
};

//! The data sets below `path` and a schema template inferred for each.
void RunDatasourceScan(const DatasourceScanFlags& flags);

void RunDatasourceRemove(const DatasourceNameFlags& flags);

}  // namespace rsl::cli
