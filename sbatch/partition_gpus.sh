#!/bin/bash
# GPUs and ranks per node for the pipeline's jobs, for Makefile.slurm: prints "GPUS TASKS" on
# stdout and, on stderr, what it chose and why.
#   GPUS_PER_NODE set: that (the operator's word); unset: the GPUs in the GRES of the nodes
#   the jobs may land on (sinfo's %G, summed over the gpu entries: "gpu:h100:8(S:0-1)" is 8,
#   no gpu entry is 0), which must be the same on all of them, or it stops with the counts
#   and what to set: a job asking for more GPUs than a node has is refused by sbatch
#   ("Invalid generic resource (gres) specification"), one asking for fewer tests part of it.
#   TASKS_PER_NODE set: that; unset: one rank per GPU, one rank on a node without GPUs.
# The nodes: NODELIST's (or ONLY_FROM's), else RESERVATION's (scontrol show reservation), within
# PARTITION (else the default partition, the one sinfo marks with '*'), less EXCLUDE and
# EXCLUDE_FROM's.
set -euo pipefail

say() { echo "gpuaccept: $*" >&2; }

tasks_for() {  # GPUS -> the ranks per node to run
  if [[ -n ${TASKS_PER_NODE:-} ]]; then echo "$TASKS_PER_NODE"
  elif (($1 > 0)); then echo "$1"
  else echo 1; fi
}

if [[ -n ${GPUS_PER_NODE:-} ]]; then
  [[ $GPUS_PER_NODE =~ ^[0-9]+$ ]] || { say "GPUS_PER_NODE='$GPUS_PER_NODE' is not a GPU count"; exit 2; }
  tasks=$(tasks_for "$GPUS_PER_NODE")
  say "GPUS_PER_NODE=$GPUS_PER_NODE TASKS_PER_NODE=$tasks (as given)"
  echo "$GPUS_PER_NODE $tasks"
  exit 0
fi

# gres_gpus GRES: the GPUs in one node's GRES string (src/slurm/gres.h does the same in C++).
gres_gpus() {
  local gres=$1 item name rest count total=0
  # shellcheck disable=SC2001  # a pattern bash's ${//} cannot say: up to the next ')'
  gres=$(sed 's/([^)]*)//g' <<<"$gres")  # "(S:0-1)": the sockets, which may hold commas
  [[ $gres == "(null)" ]] && gres=""
  IFS=, read -r -a items <<<"$gres"
  for item in "${items[@]}"; do
    name=${item%%:*}
    [[ $name == gpu ]] || continue
    rest=${item#gpu}
    count=${rest##*:}
    if [[ -z $rest ]]; then count=1  # "gpu" alone: one
    elif ! [[ $count =~ ^[0-9]+$ ]]; then
      [[ $rest == :*:* ]] && count=0 || count=1  # "gpu:h100": typed, one of it; else malformed
    fi
    total=$((total + count))
  done
  echo "$total"
}

where=()
what="the default partition"
if [[ -n ${PARTITION:-} ]]; then
  where+=(-p "$PARTITION")
  what="partition $PARTITION"
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
nodes=${NODELIST:-}
if [[ -z $nodes && -n ${ONLY_FROM:-} ]]; then
  nodes=$("$here/nodes_from_run.sh" only "$ONLY_FROM" | sed -n 's/^--nodelist=//p')
fi
if [[ -z $nodes && -n ${RESERVATION:-} ]]; then
  if ! res=$(scontrol show reservation "$RESERVATION" 2>&1); then
    say "reservation $RESERVATION: $res"
    exit 2
  fi
  nodes=$(sed -n 's/^ *Nodes=\([^ ]*\).*/\1/p' <<<"$res" | head -n 1)
fi
[[ -z $nodes ]] || { where+=(-n "$nodes"); what+=", nodes $nodes"; }
[[ -z ${RESERVATION:-} ]] || what+=" (reservation $RESERVATION)"

if ! lines=$(sinfo -h -N "${where[@]}" -o '%N|%P|%G' 2>&1); then
  say "sinfo ${where[*]} failed: $lines"
  exit 2
fi
default_only=""
[[ -n ${PARTITION:-} ]] || default_only=1
exclude=${EXCLUDE:-}
if [[ -n ${EXCLUDE_FROM:-} ]]; then
  from=$("$here/nodes_from_run.sh" exclude "$EXCLUDE_FROM" | sed -n 's/^--exclude=//p')
  exclude=${exclude:+$exclude${from:+,}}$from
fi
excluded=""
[[ -z $exclude ]] || excluded=$(scontrol show hostnames "$exclude")
declare -A by_count=()  # GPUs -> nodes with that many
while IFS='|' read -r node partition gres; do
  [[ -n $node ]] || continue
  [[ -z $default_only || $partition == *'*' ]] || continue
  [[ -z $excluded ]] || ! grep -qxF "$node" <<<"$excluded" || continue
  n=$(gres_gpus "$gres")
  [[ " ${by_count[$n]:-} " == *" $node "* ]] || by_count[$n]+=" $node"
done <<<"$lines"

if [[ ${#by_count[@]} -eq 0 ]]; then
  say "no node of $what (sinfo ${where[*]}): set GPUS_PER_NODE= and check PARTITION=, NODELIST=, RESERVATION="
  exit 2
fi
if [[ ${#by_count[@]} -gt 1 ]]; then
  say "the nodes of $what do not have the same GPUs, so no one GPUS_PER_NODE fits them all:"
  for n in "${!by_count[@]}"; do
    read -r -a list <<<"${by_count[$n]}"
    say "  $n GPU(s): ${#list[@]} node(s): $(scontrol show hostlist "$(IFS=,; echo "${list[*]}")")"
  done
  say "choose nodes that are alike (NODELIST=, CONSTRAINT=, PARTITION=), or set GPUS_PER_NODE= to what every chosen node has"
  exit 2
fi
gpus=${!by_count[*]}
read -r -a list <<<"${by_count[$gpus]}"
tasks=$(tasks_for "$gpus")
if ((gpus > 0)); then
  say "GPUS_PER_NODE=$gpus TASKS_PER_NODE=$tasks: the ${#list[@]} node(s) of $what have $gpus GPU(s) each in their GRES (sinfo)"
else
  say "GPUS_PER_NODE=0 TASKS_PER_NODE=$tasks: the ${#list[@]} node(s) of $what have no GPU in their GRES (sinfo); the GPU checks will SKIP"
fi
echo "$gpus $tasks"
