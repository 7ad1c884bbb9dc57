// What an environment ("image") contains: the Python distributions its interpreter would
// import (dist-info / egg-info metadata on its sys.path) and, for a root directory, the Debian
// packages in its dpkg status file; plus a digest of that package set.
//
// Inspection only reads metadata; it never imports a package. Asking an interpreter for its
// sys.path runs it once (with -E -s: no PYTHONPATH, no user site; steps get
// PYTHONNOUSERSITE=1 so they see the same set) under a time limit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace rsl::model {

//! How long an interpreter may take to report its sys.path (a cold start on a slow disk).
inline constexpr int64_t kInterpreterTimeoutMs = 15000;

struct Package {
  std::string name;        //!< as the metadata spells it ("PyYAML"; dpkg: "python3-numpy")
  std::string normalized;  //!< PEP 503 for Python distributions; the dpkg name otherwise
  std::string version;     //!< as recorded ("2.1.2+cu118", dpkg "1:1.24.2-1")
  std::string kind;        //!< "python" or "dpkg"
  std::string location;    //!< the metadata file or directory it came from
};

struct Inspection {
  std::string interpreter;               //!< what `python` means in the environment ("" if none)
  std::string python_version;            //!< "3.11.2" ("" if unknown)
  std::vector<std::string> search_path;  //!< directories scanned, in import precedence
  std::vector<Package> packages;         //!< Python ones sorted by name, then dpkg ones by name
  std::string digest;                    //!< "sha256:<hex>" of the package set (PackageSetDigest)

  //! The Python distribution with this PEP 503 name, or nullptr.
  const Package* FindPython(const std::string& normalized_name) const;
  //! The dpkg package with this exact name, or nullptr.
  const Package* FindDpkg(const std::string& name) const;
  size_t CountKind(const std::string& kind) const;
};

//! Runs `python` once for its sys.path and version, then scans that path.
//! Errors: IO_ERROR (cannot run, timed out, bad answer) naming the interpreter.
Result<Inspection> InspectPython(const std::string& python,
                                 int64_t timeout_ms = kInterpreterTimeoutMs);

//! Scans a root file system without running anything in it: dpkg's var/lib/dpkg/status and
//! the Python directories a Debian/Ubuntu/conda root has (usr/local/lib/python3*/
//! {dist,site}-packages, usr/lib/python3/dist-packages, usr/lib/python3*/{dist,site}-packages,
//! opt/conda/lib/python3*/site-packages). `interpreter` is root/usr/local/bin/python3 or
//! root/usr/bin/python3 when present. Errors: IO_ERROR when `root` is not a directory.
Result<Inspection> InspectRoot(const std::string& root);

//! Distributions in `dirs` (dist-info directories with METADATA, egg-info directories with
//! PKG-INFO, egg-info files); for a name found twice the first directory wins, as in Python.
std::vector<Package> ScanDistributions(const std::vector<std::string>& dirs);

//! Installed packages ("install ok installed") of a dpkg status file's text.
std::vector<Package> ParseDpkgStatus(const std::string& text, const std::string& location);

//! "sha256:" + sha256 over "<kind> <normalized> <version>\n" for every package, sorted.
std::string PackageSetDigest(const std::vector<Package>& packages);

}  // namespace rsl::model
