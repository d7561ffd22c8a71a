#!/bin/bash
# Runs a cluster test with the exports tests/cluster/up printed.
set -euo pipefail
env_file=$1
shift
[ -f "$env_file" ] || { echo "no cluster environment in $env_file: did cluster.up run?" >&2; exit 1; }
# shellcheck disable=SC1090
source "$env_file"
exec "$@"
