#!/usr/bin/env bash
# The npm packages the tests use, into the gitignored tests/node_modules, in ONE npm call:
# `npm install --no-save` of one package prunes every other package it did not list, so the
# parts (DuckDB for the data tests, playwright-core for the console's) must not install apart.
# One package per line in scripts/npm-tests.txt (`name` or `name@version`).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t pkgs < <(grep -v '^\s*#' scripts/npm-tests.txt | awk 'NF {print $1}')
missing=0
for p in "${pkgs[@]}"; do
  # name[@version]; a scoped name starts with '@' itself.
  rest=${p#@}; name=$p; want=""
  if [[ "$rest" == *@* ]]; then want=${rest##*@}; name=${p%@*}; fi
  have=$(node -e "try{console.log(require('./tests/node_modules/$name/package.json').version)}catch{}" 2>/dev/null || true)
  if [ -z "$have" ] || { [ -n "$want" ] && [ "$have" != "$want" ]; }; then missing=1; fi
done
if [ "$missing" = 1 ]; then
  # A symbolic link (a worktree sharing another's modules) is replaced by npm: install there.
  start=$(date +%s)
  npm install --no-save --no-audit --no-fund --prefix tests "${pkgs[@]}" >/dev/null
  echo "npm-tests: installed ${pkgs[*]} in $(( $(date +%s) - start )) s"
else
  echo "npm-tests: ${pkgs[*]} present"
fi
