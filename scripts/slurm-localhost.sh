#!/usr/bin/env bash
# A Slurm cluster on this one machine, for the Slurm launcher's tests (tests/test_slurm.py) and
# for trying the Slurm launcher without a cluster. No systemd, no cgroups, no accounting
# database: munged, slurmctld and slurmd run as plain background daemons of root.
#
#   scripts/slurm-localhost.sh start             # install if missing, configure, start, wait until idle
#   scripts/slurm-localhost.sh start --nodes 2   # two slurmd on this host: nodes <host>-1, <host>-2
#   scripts/slurm-localhost.sh stop              # stop the daemons and their steps, remove all state
#   scripts/slurm-localhost.sh status            # daemons and nodes; exit 0 only when usable
#   scripts/slurm-localhost.sh env               # the SLURM_CONF line for a shell that should use it
#
# Everything lives under $GLMSTACK_SLURM_DIR (/tmp/glmstack-slurm). Clients (sinfo, srun, salloc)
# read /etc/slurm/slurm.conf, which `start` links to ours when no slurm.conf is there yet (and
# `stop` removes again); otherwise they need SLURM_CONF, as `env` prints. Needs root (apt-get,
# daemons). Debian/Ubuntu packages: munge, slurmctld, slurmd, slurm-client.
set -euo pipefail

STATE=${GLMSTACK_SLURM_DIR:-/tmp/glmstack-slurm}
CONF=$STATE/slurm.conf
PARTITION=${GLMSTACK_SLURM_PARTITION:-glmstack}
SOCK=$STATE/munge/munge.socket.2
ETC_CONF=/etc/slurm/slurm.conf
CTLD_PORT=${GLMSTACK_SLURMCTLD_PORT:-6817}
SLURMD_PORT=${GLMSTACK_SLURMD_PORT:-6818}
CMD=${1:-}
NODES=${GLMSTACK_SLURM_NODES:-1}
if [ "${2:-}" = "--nodes" ]; then NODES=${3:-}; fi
case "$NODES" in ''|*[!0-9]*|0) echo "slurm-localhost: --nodes wants a count >= 1, got '$NODES'" >&2; exit 2 ;; esac
HOST=$(hostname -s)

die() { echo "slurm-localhost: $*" >&2; exit 1; }
say() { echo "slurm-localhost: $*" >&2; }
pid_of() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null && cat "$1"; }

node_names() {  # the NodeName of each slurmd of this configuration
  if [ "$NODES" = 1 ]; then echo "$HOST"; else seq -f "$HOST-%g" 1 "$NODES"; fi
}

configured_nodes() { sed -n 's/^# Written by .*: \([0-9]*\) node(s).*/\1/p' "$CONF" 2>/dev/null; }

install_packages() {
  local missing=()
  command -v munged >/dev/null || missing+=(munge)
  command -v slurmctld >/dev/null || missing+=(slurmctld)
  command -v slurmd >/dev/null || missing+=(slurmd)
  command -v srun >/dev/null || missing+=(slurm-client)
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null \
    || die "${missing[*]} missing and no apt-get to install them: install Slurm (slurmctld, slurmd, client tools) and munge"
  local log=$STATE/apt.log t0=$SECONDS
  say "installing ${missing[*]} with apt-get"
  # The packages' postinst scripts try to start services; without an init system they only say so.
  if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq \
         && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    die "apt-get could not install ${missing[*]} (whole log: $log)"
  fi
  say "installed ${missing[*]} in $((SECONDS - t0)) s"
}

write_config() {
  # The hardware as slurmd itself sees it, so that no node is drained for a mismatch.
  local node cpus sockets cores threads mem nodelines="" names i
  node=$(slurmd -C 2>/dev/null | head -n 1)
  cpus=$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<<"$node")
  sockets=$(sed -n 's/.*SocketsPerBoard=\([0-9]*\).*/\1/p' <<<"$node")
  cores=$(sed -n 's/.*CoresPerSocket=\([0-9]*\).*/\1/p' <<<"$node")
  threads=$(sed -n 's/.*ThreadsPerCore=\([0-9]*\).*/\1/p' <<<"$node")
  mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$node")
  [ -n "$cpus" ] && [ -n "$mem" ] || die "slurmd -C did not describe this machine: '$node'"
  mem=$((mem * 95 / 100))  # a little below what slurmd measures: never drained for low memory
  if [ "$NODES" = 1 ]; then
    names=$HOST
    nodelines="NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$cpus SocketsPerBoard=$sockets CoresPerSocket=$cores ThreadsPerCore=$threads RealMemory=$mem State=UNKNOWN"
  else
    # Several slurmd on one host, each a node of its own on a port of its own (slurmd -N NAME).
    # Each one reports the whole machine, and is booked with it: Slurm's books count the host
    # N times over (two 2-node allocations fit side by side); nothing is bound or enforced.
    names="$HOST-[1-$NODES]"
    for i in $(seq 1 "$NODES"); do
      nodelines+="NodeName=$HOST-$i NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$((SLURMD_PORT + i - 1)) CPUs=$cpus SocketsPerBoard=$sockets CoresPerSocket=$cores ThreadsPerCore=$threads RealMemory=$mem State=UNKNOWN"$'\n'
    done
  fi
  cat >"$CONF" <<CONF
# Written by scripts/slurm-localhost.sh: $NODES node(s) on this host, no accounting, no cgroups.
ClusterName=glmstack
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCK
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d-%n
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd-%n.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
# Without systemd and a delegated cgroup tree: track processes by parentage, bind nothing.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
# No slurmdbd: squeue answers for live jobs and steps; sacct only says accounting is disabled.
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
ReturnToService=2
# A cancelled step gets SIGTERM, then SIGKILL this many seconds later.
KillWait=5
MinJobAge=60
InactiveLimit=0
SlurmdTimeout=60
MessageTimeout=10
$nodelines
PartitionName=$PARTITION Nodes=$names Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
}

start_munge() {
  mkdir -p "$STATE/munge"
  chmod 0700 "$STATE/munge"
  if [ ! -f "$STATE/munge/munge.key" ]; then
    head -c 1024 /dev/urandom >"$STATE/munge/munge.key"
    chmod 0400 "$STATE/munge/munge.key"
  fi
  pid_of "$STATE/munge/munged.pid" >/dev/null && return 0
  # --force: munged, run as root, would refuse otherwise. Socket and key are this cluster's own.
  munged --force --socket="$SOCK" --key-file="$STATE/munge/munge.key" --pid-file="$STATE/munge/munged.pid" \
    --log-file="$STATE/munge/munged.log" --seed-file="$STATE/munge/munged.seed" 2>>"$STATE/start.err" \
    || { tail -n 20 "$STATE/start.err" "$STATE/munge/munged.log" >&2 2>/dev/null; die "munged did not start"; }
  munge -n -S "$SOCK" | unmunge -S "$SOCK" >/dev/null 2>&1 || die "munged started but does not answer on $SOCK"
}

# 'idle' (or mixed/allocated) when every node is usable, else the first state that is not.
nodes_state() {
  local states count
  states=$(sinfo -h -N -o '%T' 2>/dev/null | sort -u) || true
  count=$(sinfo -h -N -o '%N' 2>/dev/null | wc -l) || true
  if [ -z "$states" ]; then echo ""; return; fi
  if [ "$count" = "$NODES" ] && ! grep -q -v -x -E 'idle|mixed|allocated' <<<"$states"; then
    head -n 1 <<<"$states"
  else
    grep -v -x -E 'idle|mixed|allocated' <<<"$states" | head -n 1
  fi
}

start() {
  local t0=$SECONDS name state=""
  [ "$(id -u)" = 0 ] || die "run as root: the daemons run as root, and steps start as their submitting user"
  if pid_of "$STATE/slurmctld.pid" >/dev/null && [ "$(configured_nodes)" != "$NODES" ]; then
    die "already running with $(configured_nodes) node(s); '$0 stop' first"
  fi
  mkdir -p "$STATE/ctld"
  install_packages
  write_config
  if [ -e "$ETC_CONF" ] || [ -L "$ETC_CONF" ]; then
    [ "$(readlink "$ETC_CONF" 2>/dev/null)" = "$CONF" ] \
      || say "$ETC_CONF is not ours: clients need 'export SLURM_CONF=$CONF'"
  else
    mkdir -p "$(dirname "$ETC_CONF")"
    ln -s "$CONF" "$ETC_CONF"
  fi
  export SLURM_CONF=$CONF
  start_munge
  if ! pid_of "$STATE/slurmctld.pid" >/dev/null; then
    # -i: ignore saved state (there is none after stop; a crash may leave some).
    slurmctld -f "$CONF" -i 2>>"$STATE/start.err" || { tail -n 20 "$STATE/slurmctld.log" >&2; die "slurmctld did not start"; }
  fi
  for name in $(node_names); do
    mkdir -p "$STATE/d-$name"
    pid_of "$STATE/slurmd-$name.pid" >/dev/null && continue
    if [ "$NODES" = 1 ]; then set -- slurmd -f "$CONF"; else set -- slurmd -f "$CONF" -N "$name"; fi
    "$@" 2>>"$STATE/start.err" || { tail -n 20 "$STATE/slurmd-$name.log" >&2; die "slurmd of node $name did not start"; }
  done
  for _ in $(seq 1 300); do
    state=$(nodes_state)
    case "$state" in
      idle|mixed|allocated) break ;;
      drain*|down*) scontrol update nodename="$(node_names | paste -sd, -)" state=resume >/dev/null 2>&1 || true ;;
    esac
    sleep 0.1
  done
  case "$state" in
    idle|mixed|allocated) ;;
    *) tail -n 15 "$STATE"/slurmctld.log "$STATE"/slurmd-*.log >&2 || true
       die "nodes $(node_names | paste -sd, -) are '${state:-not listed}' after 30 s (logs in $STATE)" ;;
  esac
  say "up in $((SECONDS - t0)) s: partition $PARTITION, nodes $(sinfo -h -N -o '%N' | paste -sd, -) $state" \
      "($(sinfo -h -N -o '%c CPUs, %m MB' | head -n 1) each)"
}

terminate() {  # SIGTERM to the daemons of these pid files, SIGKILL to those alive 5 s later
  local f pid pids=()
  for f in "$@"; do pid=$(pid_of "$f") && pids+=("$pid") && kill "$pid" 2>/dev/null || true; done
  for _ in $(seq 1 100); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && return 0
    sleep 0.05
  done
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
}

stop() {
  local d
  export SLURM_CONF=$CONF
  if [ -f "$CONF" ] && pid_of "$STATE/slurmctld.pid" >/dev/null; then
    scancel --quiet --full --user root >/dev/null 2>&1 || true  # the jobs of this cluster only
  fi
  # The Slurm daemons together (a second or two each to shut down), munged after them.
  terminate "$STATE"/slurmd-*.pid "$STATE/slurmctld.pid"
  terminate "$STATE/munge/munged.pid"
  # Steps that outlived their slurmd: a slurmstepd is a process of its own, working in our state dir.
  for d in /proc/[0-9]*; do
    case "$(readlink "$d/cwd" 2>/dev/null)" in "$STATE"|"$STATE"/*) ;; *) continue ;; esac
    case "$(tr '\0' ' ' <"$d/cmdline" 2>/dev/null)" in "slurmstepd: ["*) kill -9 "${d#/proc/}" 2>/dev/null || true ;; esac
  done
  if [ "$(readlink "$ETC_CONF" 2>/dev/null)" = "$CONF" ]; then rm -f "$ETC_CONF"; fi
  rm -rf "$STATE"
  say "stopped"
}

status() {
  local ok=0 f name pid
  export SLURM_CONF=$CONF
  [ -f "$CONF" ] || { echo "not configured ($CONF missing)"; return 1; }
  NODES=$(configured_nodes)
  for name in munged slurmctld $(node_names | sed 's/^/slurmd-/'); do
    case $name in munged) f=$STATE/munge/munged.pid ;; *) f=$STATE/$name.pid ;; esac
    if pid=$(pid_of "$f"); then echo "$name: running (pid $pid)"; else echo "$name: not running"; ok=1; fi
  done
  sinfo -N -o '%N %P %T %c %m' || ok=1
  case "$(nodes_state)" in idle|mixed|allocated) ;; *) ok=1 ;; esac
  return $ok
}

case "$CMD" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  env) echo "export SLURM_CONF=$CONF" ;;
  *) echo "usage: $0 {start [--nodes N]|stop|status|env}" >&2; exit 2 ;;
esac
