#!/usr/bin/env bash
# Load benchmark of fixloop against a floor (bare Bun.serve + bun:sqlite), in one run, on loopback.
#   POST /v1/feedback, GET /v1/feedback?limit=50 (newest page) and GET with a random cursor, at 1M rows.
# Servers run pinned to one core (taskset -c $BENCH_SERVER_CPU), wrk to the other ($BENCH_LOAD_CPU).
# Every load step is bounded by wrk's -d; every wait loop by a count. Raw output goes to bench/out/.
#
# Both servers are up for the whole run and take turns (floor, fixloop) per scenario, so drift in the
# machine's load hits both alike. The GET scenarios run BENCH_ROUNDS times each and the best round
# counts; POST runs once per server (a second fixloop round would inherit the first one's job backlog).
#
# Usage: bun run bench        (or: bash bench/run.sh)
# Knobs (env): BENCH_ROWS=1000000 BENCH_DURATION=10 BENCH_WARMUP=3 BENCH_POST_WARMUP=10 BENCH_CONNECTIONS=64 BENCH_ROUNDS=2
#              BENCH_SERVER_CPU=0 BENCH_LOAD_CPU=1 FIXLOOP_BIN=dist/fixloop BENCH_OUT=bench/out
#              BENCH_KEEP=1 (keep the data dirs)
#              BENCH_BASELINE_BIN=/path/to/older/fixloop: a third server, "baseline", on a copy of fixloop's
#              seeded data dir, taking its turns in the GET rounds (floor, fixloop, baseline): before/after
#              list figures from one run under the same machine load (POST before/after: bench/intake.sh).
#              It must know every migration of FIXLOOP_BIN. BENCH_SKIP_POST=1 runs the GET scenarios only.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${BENCH_OUT:-$ROOT/bench/out}
ROWS=${BENCH_ROWS:-1000000}
DURATION=${BENCH_DURATION:-10}
WARMUP=${BENCH_WARMUP:-3}
POST_WARMUP=${BENCH_POST_WARMUP:-10}
CONNS=${BENCH_CONNECTIONS:-64}
ROUNDS=${BENCH_ROUNDS:-2}
SERVER_CPU=${BENCH_SERVER_CPU:-0}
LOAD_CPU=${BENCH_LOAD_CPU:-1}
BIN=${FIXLOOP_BIN:-$ROOT/dist/fixloop}

log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# --- tools -----------------------------------------------------------------------------------------
if ! command -v wrk >/dev/null; then
  log "installing wrk (apt-get)"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi
for tool in taskset curl ss; do command -v "$tool" >/dev/null || { log "$tool is required"; exit 1; }; done
if [ ! -x "$BIN" ]; then
  [ -z "${FIXLOOP_BIN:-}" ] || { log "FIXLOOP_BIN=$FIXLOOP_BIN is not an executable"; exit 1; }
  log "building $BIN"
  bun run build >/dev/null
fi
[ "$(nproc)" -ge 2 ] || log "warning: fewer than 2 cores; server and load tool will share a core"

# --- scratch space and cleanup ---------------------------------------------------------------------
mkdir -p "$OUT"
rm -f "$OUT"/*.txt "$OUT"/*.log "$OUT"/summary.* "$OUT"/tenant.env
WORK=$(mktemp -d /tmp/fixloop-bench.XXXXXX)
declare -A PID=()
cleanup() {
  for p in "${PID[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  if [ "${BENCH_KEEP:-0}" = 1 ]; then log "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

# free_port, start_server, stop_server
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# CPU ticks used by a process, and busy ticks of the server's core: tells whether the server had its
# core to itself during a run (other work on the machine shows up as core busy minus server).
proc_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
core_busy() { awk -v c="cpu$SERVER_CPU" '$1 == c {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat; }

# One scenario on one server: a warm-up (discarded), then the measured run, same script and connections.
load() { # name server port script args...
  local name=$1 server=$2 port=$3 script=$4; shift 4
  local url="http://127.0.0.1:$port"
  local warmup=$WARMUP
  # fixloop builds its similarity index (the App's newest 100k reports) on the first report after a
  # start: a one-time cost the POST warm-up absorbs, so the measured run shows the steady state.
  [ "$script" = post.lua ] && warmup=$POST_WARMUP
  log "$name: ${warmup}s warm-up + ${DURATION}s measured, $CONNS connections"
  taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNS" -d"${warmup}s" -s "bench/$script" "$url" -- "$@" >"$OUT/$name.warmup.txt"
  local p0 c0 t0
  p0=$(proc_ticks "${PID[$server]}"); c0=$(core_busy); t0=$(date +%s%N)
  taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency -s "bench/$script" "$url" -- "$@" >"$OUT/$name.txt"
  local p1 c1 t1
  p1=$(proc_ticks "${PID[$server]}"); c1=$(core_busy); t1=$(date +%s%N)
  awk -v p=$((p1 - p0)) -v c=$((c1 - c0)) -v ns=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" \
    'BEGIN { s = ns / 1e9; printf "CPU {\"server_pct\":%.1f,\"core_pct\":%.1f}\n", 100 * p / hz / s, 100 * c / hz / s }' >>"$OUT/$name.txt"
}

# --- record the machine and the command ------------------------------------------------------------
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "command: BENCH_ROWS=$ROWS BENCH_DURATION=$DURATION BENCH_WARMUP=$WARMUP BENCH_POST_WARMUP=$POST_WARMUP BENCH_CONNECTIONS=$CONNS BENCH_ROUNDS=$ROUNDS bash bench/run.sh"
  echo "fixloop: $BIN ($("$BIN" version 2>/dev/null || echo '?'), built $(date -u -r "$BIN" +%Y-%m-%dT%H:%M:%SZ)); work tree at git $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "bun: $(bun --version); wrk: $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2)"
  echo "cpu: $(nproc) x $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); kernel $(uname -r); $(free -g | awk '/Mem:/ {print $2}') GiB"
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "server on cpu $SERVER_CPU, wrk on cpu $LOAD_CPU; wrk -t1 -c$CONNS, ${WARMUP}s warm-up (POST ${POST_WARMUP}s), ${DURATION}s measured; GET best of $ROUNDS rounds"
} >"$OUT/machine.txt"

# --- data: fixloop's data dir through the CLI, the floor's db, the same rows in both ----------------
log "seeding $ROWS rows into fixloop's data dir and the floor's database"
bun bench/seed.ts --bin "$BIN" --data-dir "$WORK/fixloop" --floor-db "$WORK/floor.db" --out "$OUT" --rows "$ROWS" | tee "$OUT/seed.log" >&2
# shellcheck disable=SC1091
source "$OUT/tenant.env"
# The baseline's copy of the seeded data dir, taken before any server opens it.
[ -z "${BENCH_BASELINE_BIN:-}" ] || cp -a "$WORK/fixloop" "$WORK/baseline"

# --- both servers, pinned to the same core ----------------------------------------------------------
FLOOR_PORT=$(free_port 28091)
start_server floor "$FLOOR_PORT" env FLOOR_DB="$WORK/floor.db" FLOOR_PORT="$FLOOR_PORT" FLOOR_ORG_ID="$ORG_ID" \
  FLOOR_APP_ID="$APP_ID" FLOOR_PUB_KEY="$PUB_KEY" FLOOR_SK_KEY="$SK_KEY" bun bench/floor-server.ts
FIXLOOP_PORT=$(free_port 28090)
start_server fixloop "$FIXLOOP_PORT" env FIXLOOP_RATE_LIMIT_MULTIPLIER=100000 FIXLOOP_LOG_LEVEL=warn \
  "$BIN" serve --host 127.0.0.1 --port "$FIXLOOP_PORT" --data-dir "$WORK/fixloop"
log "floor on 127.0.0.1:$FLOOR_PORT, fixloop on 127.0.0.1:$FIXLOOP_PORT"
LIST_SERVERS="floor fixloop"
declare -A PORT_OF=([floor]=$FLOOR_PORT [fixloop]=$FIXLOOP_PORT)
if [ -n "${BENCH_BASELINE_BIN:-}" ]; then
  BASELINE_PORT=$(free_port $((FIXLOOP_PORT + 1)))
  start_server baseline "$BASELINE_PORT" env FIXLOOP_RATE_LIMIT_MULTIPLIER=100000 FIXLOOP_LOG_LEVEL=warn \
    "$BENCH_BASELINE_BIN" serve --host 127.0.0.1 --port "$BASELINE_PORT" --data-dir "$WORK/baseline"
  echo "baseline: $BENCH_BASELINE_BIN (built $(date -u -r "$BENCH_BASELINE_BIN" +%Y-%m-%dT%H:%M:%SZ))" >>"$OUT/machine.txt"
  LIST_SERVERS="floor fixloop baseline"
  PORT_OF[baseline]=$BASELINE_PORT
  log "baseline on 127.0.0.1:$BASELINE_PORT"
fi

for round in $(seq "$ROUNDS"); do
  for s in $LIST_SERVERS; do
    load "$s-list-newest.r$round" "$s" "${PORT_OF[$s]}" list.lua "$SK_KEY"
  done
  for s in $LIST_SERVERS; do
    load "$s-list-cursor.r$round" "$s" "${PORT_OF[$s]}" list.lua "$SK_KEY" "$OUT/cursors.txt"
  done
done
[ -n "${PID[baseline]:-}" ] && stop_server baseline
if [ "${BENCH_SKIP_POST:-0}" = 1 ]; then
  stop_server floor; stop_server fixloop
  echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"
  bun bench/report.ts "$OUT"
  exit 0
fi
# POST last: it grows the tables, and fixloop's worker keeps processing the new rows afterwards.
load floor-post.r1 floor "$FLOOR_PORT" post.lua "$PUB_KEY"
stop_server floor
load fixloop-post.r1 fixloop "$FIXLOOP_PORT" post.lua "$PUB_KEY"
# Did fixloop's worker keep up? Reports accepted but not yet processed (WAL: readable while it runs).
bun -e '
  const { Database } = require("bun:sqlite")
  const db = new Database(process.argv[1], { readonly: true })
  const q = (s) => Object.values(db.query(s).get())[0]
  console.log("BACKLOG " + JSON.stringify({
    pendingJobs: q("SELECT count(*) FROM jobs WHERE kind = '"'"'process'"'"'"),
    unprocessed: q("SELECT count(*) FROM feedback WHERE status IN ('"'"'received'"'"', '"'"'sanitizing'"'"', '"'"'sanitized'"'"')"),
  }))' "$WORK/fixloop/fixloop.db" >>"$OUT/fixloop-post.r1.txt"
stop_server fixloop

echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"
bun bench/report.ts "$OUT"
