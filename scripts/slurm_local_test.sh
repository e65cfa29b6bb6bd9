#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Slurm launch of docs/SCALE.md, for real, on this machine: a private
# single-node Slurm (munged, slurmctld and slurmd on localhost from Debian's
# slurm-wlm packages, a SLURM_CONF and state in a temporary directory), an
# `sbatch --array` job of edo-quantize shards that take their shard from
# SLURM_ARRAY_TASK_ID, then edo-pack --merge and a byte comparison with the
# one-process file. Its own daemons are stopped by their process ids at the
# end, whatever happens.
#
#   scripts/slurm_local_test.sh BUILD_DIR SOURCE_DIR [SHARDS]
#
# Exit 0: identical; 1: a failure; 77: skipped, with the reason (no Slurm or
# munge binaries, not root, or another slurmctld already running here).
set -uo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
shards=${3:-3}
skip() { echo "skipped: $*"; exit 77; }
for bin in munged slurmctld slurmd sbatch squeue sinfo; do
  command -v "$bin" >/dev/null 2>&1 || skip "no $bin (apt-get install slurmctld slurmd slurm-client munge)"
done
[ "$(id -u)" = 0 ] || skip "slurmd runs jobs as their users and must start as root"
pgrep -x slurmctld >/dev/null && skip "another slurmctld runs on this machine"

tmp=$(mktemp -d /tmp/edo-slurm.XXXXXX)
chmod 755 "$tmp"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for log in "$tmp"/*.log; do [ -f "$log" ] && { echo "--- $log"; tail -15 "$log"; }; done
  exit 1
}
free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# munge: a private key and socket.
mkdir -p "$tmp/munge" "$tmp/state" "$tmp/spool"
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
chmod 700 "$tmp/munge"
chmod 400 "$tmp/munge/munge.key"
munged --force --foreground --key-file="$tmp/munge/munge.key" --socket="$tmp/munge/munge.sock" \
  --pid-file="$tmp/munge/munged.pid" --log-file="$tmp/munged.log" --seed-file="$tmp/munge/seed" \
  >"$tmp/munged.out.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$tmp/munge/munge.sock" ] && break; sleep 0.1; done
[ -S "$tmp/munge/munge.sock" ] || fail "munged did not start"

cpus=$(nproc)
cat >"$tmp/slurm.conf" <<EOF
ClusterName=edotest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$tmp/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
NodeName=edonode NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=1000 State=UNKNOWN
PartitionName=edo Nodes=edonode Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$tmp/slurm.conf"
slurmctld -D -f "$SLURM_CONF" >"$tmp/slurmctld.out.log" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N edonode >"$tmp/slurmd.out.log" 2>&1 &
pids+=($!)
state=
deadline=$((SECONDS + 30))
while [ $SECONDS -lt $deadline ]; do
  state=$(timeout 5 sinfo -h -o %t 2>/dev/null | head -1)
  [ "$state" = idle ] && break
  sleep 0.2
done
[ "$state" = idle ] || fail "the node did not come up (state '$state')"

table="$tmp/table.npy"
/usr/bin/python3 -c "import numpy as np; np.save('$table', np.load('$src/data-samples/glove.6B.50d.10k.npy'))"
"$build/edo-quantize" "$table" -o "$tmp/whole.edo" --codec int8 -q >/dev/null || fail "the one-process run"
# The job script, as docs/SCALE.md shows it: the shard comes from SLURM_ARRAY_TASK_ID.
cat >"$tmp/encode.sbatch" <<EOF
#!/bin/bash
#SBATCH --job-name=edo-encode
#SBATCH --cpus-per-task=1
#SBATCH --output=$tmp/encode-%a.log
exec "$build/edo-quantize" "$table" -o "$tmp/part-\${SLURM_ARRAY_TASK_ID}.edo" --codec int8 -q
EOF
job=$(sbatch --parsable --array=0-$((shards - 1)) "$tmp/encode.sbatch") || fail "sbatch refused the array"
finished=
deadline=$((SECONDS + 120))
while [ $SECONDS -lt $deadline ]; do
  queue=$(timeout 5 squeue -h -j "$job" 2>&1) && [ -z "$queue" ] && { finished=1; break; }
  sleep 0.2
done
[ -n "$finished" ] || fail "job $job did not finish in 120 s"
for i in $(seq 0 $((shards - 1))); do
  grep -q "shard $i/$shards (rows .*) from SLURM_ARRAY_TASK_ID=" "$tmp/encode-$i.log" ||
    fail "task $i did not say it took shard $i/$shards from the array"
done
"$build/edo-pack" --merge "$tmp"/part-*.edo -o "$tmp/merged.edo" -q || fail "edo-pack --merge"
cmp -s "$tmp/whole.edo" "$tmp/merged.edo" || fail "the merged file differs from the one-process file"
echo "slurm: $shards array tasks (job $job) merged into the one-process file, byte for byte"
