#!/bin/bash
# The sbatch options every job of one pipeline gets from the operator's Makefile.slurm
# variables, one option per line (Makefile.slurm reads them into a bash array: each is one
# argument to sbatch and none passes through a shell):
#   slurm_options.sh phase    the phase jobs (the array, or one phase): nodes, time, GPUs
#   slurm_options.sh report   the report job: the same partition, account, reservation, QOS,
#                             constraint and exclusions; one node, any of them
# Inputs, from the environment, all optional:
#   PARTITION ACCOUNT RESERVATION QOS CONSTRAINT   passed as they are
#   NODELIST EXCLUDE                               Slurm hostlists
#   EXCLUDE_FROM ONLY_FROM                         an earlier run whose bad-nodes.txt to avoid or keep to
#   NODES                                          node count; default NODELIST's (or ONLY_FROM's) count, else 2
#   TIME                                           each phase's time limit (sbatch --time)
#   PIPELINE_TIME                                  checked only (sbatch/pipeline.sbatch applies it)
#   GPUS_PER_NODE                                  --gpus-per-node when > 0
# Each value is checked against the characters Slurm takes for it, so a typo is named by its
# variable here rather than by sbatch. The node selection is said on stderr.
# Every option used exists in Slurm 22.05 and 24.11 alike.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mode=${1:-}
case $mode in phase | report) ;; *)
  echo "usage: $0 phase|report" >&2
  exit 2
  ;;
esac

refuse() {
  echo "gpuaccept: $1" >&2
  exit 2
}
# check NAME REGEX WHAT: the variable NAME, when set, matches REGEX.
check() {
  local value=${!1:-}
  [[ -z $value || $value =~ $2 ]] || refuse "$1='$value' is not $3"
}
hostlist_re='^[]A-Za-z0-9._,[-]+$'  # ']' first and '-' last: literal inside the brackets
name_re='^[A-Za-z0-9._,@+-]+$'
time_re='^([0-9]+-)?[0-9]+(:[0-9]+){0,2}$'
check PARTITION "$name_re" "a partition name (or a comma list of them)"
check ACCOUNT "$name_re" "an account name"
check RESERVATION "$name_re" "a reservation name"
check QOS "$name_re" "a QOS name"
check CONSTRAINT '^[]A-Za-z0-9._:,&|*()![@-]+$' "a Slurm constraint (features joined by & | , [ ] *)"
check NODELIST "$hostlist_re" "a Slurm hostlist (gpu[01-04],gpu09)"
check EXCLUDE "$hostlist_re" "a Slurm hostlist (gpu[01-04],gpu09)"
check NODES '^[1-9][0-9]*$' "a node count"
check TIME "$time_re" "a Slurm time (minutes, HH:MM:SS or D-HH:MM:SS)"
check PIPELINE_TIME "$time_re" "a Slurm time (minutes, HH:MM:SS or D-HH:MM:SS)"
check GPUS_PER_NODE '^[0-9]+$' "a GPU count"
[[ -z ${ONLY_FROM:-} || -z ${NODELIST:-} ]] || refuse "ONLY_FROM= and NODELIST= both name the nodes: give one"

# The nodes: NODELIST or an earlier run's bad nodes (nodes_from_run.sh checks its file), and
# what to avoid: EXCLUDE and an earlier run's bad nodes, as one --exclude (sbatch keeps only the last).
nodelist=${NODELIST:-}
if [[ -n ${ONLY_FROM:-} ]]; then
  sel=$("$here/nodes_from_run.sh" only "$ONLY_FROM")
  nodelist=$(sed -n 's/^--nodelist=//p' <<<"$sel")
fi
exclude=${EXCLUDE:-}
if [[ -n ${EXCLUDE_FROM:-} ]]; then
  sel=$("$here/nodes_from_run.sh" exclude "$EXCLUDE_FROM")
  from=$(sed -n 's/^--exclude=//p' <<<"$sel")
  exclude=${exclude:+$exclude${from:+,}}$from
fi

common=()
[[ -z ${PARTITION:-} ]] || common+=("--partition=$PARTITION")
[[ -z ${ACCOUNT:-} ]] || common+=("--account=$ACCOUNT")
[[ -z ${RESERVATION:-} ]] || common+=("--reservation=$RESERVATION")
[[ -z ${QOS:-} ]] || common+=("--qos=$QOS")
[[ -z ${CONSTRAINT:-} ]] || common+=("--constraint=$CONSTRAINT")
[[ -z $exclude ]] || common+=("--exclude=$exclude")

if [[ $mode == report ]]; then
  # One node writes the report: any node the pipeline may use (not --nodelist, which would
  # give the job every node it names).
  printf '%s\n' --nodes=1 --ntasks=1 --time=00:10:00 "${common[@]}"
  exit 0
fi

selection=()
nodes=${NODES:-}
if [[ -n $nodelist ]]; then
  count=$(scontrol show hostnames "$nodelist" | wc -l)
  # Slurm gives a job every node of its --nodelist, and refuses one whose --nodes is fewer.
  if [[ -n $nodes ]] && ((nodes < count)); then
    refuse "NODES=$nodes but the node list $nodelist names $count nodes: a job gets every node of its --nodelist; leave NODES out or set it to $count or more"
  fi
  nodes=${nodes:-$count}
  selection+=("--nodelist=$nodelist" "--nodes=$nodes")
fi
[[ -z $exclude ]] || selection+=("--exclude=$exclude")
[[ ${#selection[@]} -eq 0 ]] || echo "node selection: ${selection[*]}" >&2
options=("--nodes=${nodes:-2}" "--time=${TIME:-01:00:00}")
[[ -n $nodelist ]] && options+=("--nodelist=$nodelist")
options+=("${common[@]}")
if [[ ${GPUS_PER_NODE:-0} -gt 0 ]]; then
  options+=("--gpus-per-node=$GPUS_PER_NODE")
fi
printf '%s\n' "${options[@]}"
