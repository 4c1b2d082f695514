#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make bench: runs gpuipc_test --bench with its defaults and keeps the results
# as bench/results/<device>-<date>.json (every sample) and .md (the tables
# the run printed). Progress goes to stderr. Exits as gpuipc_test did.
set -u
prog=${1:-./gpuipc_test}
dir=${2:-bench/results}
shift 2 2>/dev/null || shift $#

mkdir -p "$dir" || exit 1
tmp="$dir/.bench-$$"
"$prog" --bench --json "$tmp.json" "$@" >"$tmp.md"
rc=$?
# The run's document (docs/result.schema.json) holds the results as "bench".
if ! grep -q '^  "bench": {' "$tmp.json" 2>/dev/null; then
    cat "$tmp.md"
    rm -f "$tmp.json" "$tmp.md"
    echo "make bench: gpuipc_test --bench exited $rc and wrote no results" >&2
    exit "$rc"
fi
# "NVIDIA H100 80GB HBM3" -> nvidia-h100-80gb-hbm3; the date of the run (UTC).
device=$(awk '/^  "bench": [{]/ { b = 1 }
             b && /^      "name": / { sub(/^      "name": "/, ""); sub(/",?$/, ""); print; exit }' \
         "$tmp.json" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9][^a-z0-9]*/-/g; s/^-//; s/-$//')
date=$(sed -n 's/^  "time": "\([0-9-]*\)T.*/\1/p' "$tmp.json" | head -n 1)
name="$dir/${device:-unknown}-${date:-undated}"
mv "$tmp.json" "$name.json" && mv "$tmp.md" "$name.md" || exit 1
echo "make bench: wrote $name.json and $name.md (gpuipc_test exited $rc)" >&2
exit "$rc"
