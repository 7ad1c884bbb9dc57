#!/usr/bin/env bash
# CI: the repository's own checks that need no build: every #include follows the layer table
# of src/README.md, every function docs/run_flow.md names still exists where it says, no two
# files of a layer's library define the same file-local name (the packages' unity build would
# mix them), and every C++ file is as clang-format (.clang-format) writes it (`make format`
# fixes that).
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 scripts/check_includes.py
python3 scripts/check_run_flow.py
python3 scripts/check_unity_names.py
make --no-print-directory format-check
