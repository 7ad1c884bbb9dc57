// The datasource catalog: named connections to where data lives, kept in the state
// directory's database (<state-dir>/rsl.db, tables of component "data"). `seedctl datasource`
// and the admission check use it; a controller may serve the same class over HTTP.
//
// Credentials (access/secret keys) are stored in the database (keep the state directory
// private: it is created 0700) and never returned by anything that prints: use
// Datasource::RedactedJson() for output. Threading: a Catalog serialises its calls.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/secret_box.h"
#include "base/sqlite.h"
#include "base/status.h"
#include "data/storage.h"

namespace rsl::data {

struct Datasource {
  std::string name;
  std::string kind;  //!< hdfs | ceph | s3 | local
  // hdfs
  std::vector<std::string> namenodes;  //!< "ns1:8020": RPC addresses; host names match URIs
  bool kerberos = false;
  std::string webhdfs_url;  //!< optional: comma-separated http://host:port per namenode
                            //!< (default: each namenode's host, port 9870)
  // ceph, s3
  std::string endpoint;    //!< http(s)://host:port; s3 default https://s3.<region>.amazonaws.com
  std::string access_key;  //!< secret-ish: never printed (only a masked form)
  std::string secret_key;  //!< secret: never printed
  std::string region = "us-east-1";
  std::string bucket;      //!< optional: the one bucket this datasource serves
  bool path_style = true;  //!< path-style addressing (Ceph default); false: virtual-host
  // local
  std::string authority;  //!< "hdfs://ns1": URIs under it are served from `path`
  std::string path;
  std::string created_at;  //!< RFC 3339, set by Register

  //! Every field except the secret key, the access key masked ("0555…d804").
  nlohmann::json RedactedJson() const;
};

//! Checks a datasource before it is stored (kind-specific required fields, URL forms).
//! Errors: INVALID_ARGUMENT naming the flag.
Status ValidateDatasource(const Datasource& ds);

class Catalog {
 public:
  //! Opens (creating) the catalog in `state_dir`.
  static Result<std::unique_ptr<Catalog>> Open(const std::string& state_dir);

  //! Adds a datasource; one with the same name: CONFLICT unless `replace`.
  Status Register(Datasource ds, bool replace = false);
  Result<std::vector<Datasource>> List();
  //! NOT_FOUND with a "did you mean" hint for unknown names.
  Result<Datasource> Get(const std::string& name);
  Status Remove(const std::string& name);
  //! The datasource that serves a URI, or nullopt:
  //!  - a `local` datasource whose authority is the URI's scheme://authority;
  //!  - hdfs: one whose namenode host or name equals the authority, else the only hdfs one;
  //!  - s3/ceph: one of that kind whose bucket equals the authority, else one without a
  //!    bucket if it is the only one of that kind.
  Result<std::optional<Datasource>> Resolve(const Uri& uri);

 private:
  Catalog(std::unique_ptr<Db> db, std::shared_ptr<const SecretBox> box)
      : db_(std::move(db)), box_(std::move(box)) {}
  std::mutex mu_;
  std::unique_ptr<Db> db_;
  std::shared_ptr<const SecretBox> box_;  // seals the credentials (column `secret`)
};

}  // namespace rsl::data
