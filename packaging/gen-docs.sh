#!/usr/bin/env bash
# Generates what the packages ship besides the binaries, from the built seedctl itself:
#   OUT/man/*.1.gz        seedctl's and rsl-controller's man pages (`seedctl man`)
#   OUT/completion/seedctl, OUT/completion/_seedctl   bash and zsh (`seedctl completion`)
# Compressed with gzip -9n (no name, no timestamp) as Debian wants.
# Usage: gen-docs.sh SEEDCTL OUT
set -euo pipefail
seedctl=$1
out=$2
rm -rf "$out/man" "$out/completion"
mkdir -p "$out/man" "$out/completion"
"$seedctl" man "$out/man" >/dev/null
gzip -9nf "$out"/man/*.1
"$seedctl" completion bash >"$out/completion/seedctl"
"$seedctl" completion zsh >"$out/completion/_seedctl"
