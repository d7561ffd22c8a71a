#!/bin/bash
# Prints the sbatch options that choose nodes from an earlier run's report, for
# Makefile.slurm's EXCLUDE_FROM= and ONLY_FROM=, one option per line:
#   nodes_from_run.sh exclude RUN_DIR   ->  --exclude=<RUN_DIR/bad-nodes.txt>   (nothing when empty)
#   nodes_from_run.sh only RUN_DIR      ->  --nodelist=<...> and --nodes=<count>
# The hostlist comes from a file on a shared filesystem: it is refused unless it is one
# Slurm hostlist of plain characters, so nothing else reaches sbatch's command line.
set -euo pipefail
mode=${1:-}
run=${2:-}
case $mode in exclude | only) ;; *)
  echo "usage: $0 exclude|only RUN_DIR" >&2
  exit 2
  ;;
esac
file=$run/bad-nodes.txt
if [ ! -f "$file" ]; then
  echo "gpuaccept: $file does not exist: run the report on $run first (make -f Makefile.slurm report RUN=$run)" >&2
  exit 2
fi
list=$(tr -d '\n' <"$file")
hostlist_chars='^[]A-Za-z0-9._,[-]*$'  # ']' first and '-' last: literal inside the brackets
if ! [[ $list =~ $hostlist_chars ]]; then
  echo "gpuaccept: $file does not hold one Slurm hostlist (only A-Z a-z 0-9 . _ - , [ ] are allowed)" >&2
  exit 2
fi
if [ "$mode" = exclude ]; then
  [ -z "$list" ] || printf -- '--exclude=%s\n' "$list"
  exit 0
fi
if [ -z "$list" ]; then
  echo "gpuaccept: $file is empty: run $run drained no node, so there is nothing to re-run on" >&2
  exit 2
fi
count=$(scontrol show hostnames "$list" | wc -l)
printf -- '--nodelist=%s\n--nodes=%s\n' "$list" "$count"
