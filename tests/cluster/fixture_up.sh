#!/bin/bash
# ctest fixture: start the local cluster and keep its exports for the tests.
set -euo pipefail
env_file=$1
"$(dirname "$0")/up" >"$env_file.tmp"
mv "$env_file.tmp" "$env_file"
cat "$env_file"
