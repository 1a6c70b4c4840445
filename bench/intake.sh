#!/usr/bin/env bash
# Intake benchmark of issue 10 item 2, in ONE run, on loopback: POST /v1/feedback with a realistic widget
# body (bench/widget.lua) against three servers taking turns, on an empty and on a large database:
#   bare   - bench/bare-floor.ts: Bun.serve + bun:sqlite, one INSERT per request, commit per request,
#            no framework, no job row, no extra index (the issue's "barest floor");
#   floor  - bench/floor-server.ts: the same work as fixloop (its tables and indexes, row + job per commit);
#   fixloop- the compiled binary, its worker running as in production.
# Every server is pinned to one core (taskset -c $BENCH_SERVER_CPU), wrk to the other. After the bursts,
# with the floors stopped, the rate at which fixloop's worker drains its backlog (bench/drain.ts, bounded).
# The drain runs with nothing else on the machine: the server's threads may then use both cores (its
# processing thread on one, the sanitize-ahead thread on the other); BENCH_DRAIN_PINNED=1 keeps the
# pinning of the load phase instead (every thread but the idle HTTP thread on the load core).
# BENCH_BASELINE_BIN=/path/to/older/fixloop adds a fourth server, "baseline" (e.g. main's binary), taking
# its turns like the others: before/after figures from one run, under the same machine load.
#
# Usage: bash bench/intake.sh     (or: bun run bench:intake)
# Knobs (env): BENCH_ROWS=1000000 (the large database; the empty one always runs) BENCH_DURATION=10
#   BENCH_WARMUP=5 BENCH_CONNECTIONS=64 BENCH_ROUNDS=2 BENCH_DRAIN_MAX=120 BENCH_SERVER_CPU=0
#   BENCH_LOAD_CPU=1 BENCH_PIN_THREADS=1 BENCH_DRAIN_PINNED=0 FIXLOOP_BIN=dist/fixloop BENCH_BASELINE_BIN= BENCH_OUT=bench/out/intake BENCH_KEEP=1
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${BENCH_OUT:-$ROOT/bench/out/intake}
ROWS=${BENCH_ROWS:-1000000}
DURATION=${BENCH_DURATION:-10}
WARMUP=${BENCH_WARMUP:-5}
CONNS=${BENCH_CONNECTIONS:-64}
ROUNDS=${BENCH_ROUNDS:-2}
DRAIN_MAX=${BENCH_DRAIN_MAX:-120}
SERVER_CPU=${BENCH_SERVER_CPU:-0}
LOAD_CPU=${BENCH_LOAD_CPU:-1}
BIN=${FIXLOOP_BIN:-$ROOT/dist/fixloop}

log() { printf '[intake %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
for tool in wrk taskset curl ss; do command -v "$tool" >/dev/null || { log "$tool is required"; exit 1; }; done
if [ ! -x "$BIN" ]; then
  [ -z "${FIXLOOP_BIN:-}" ] || { log "FIXLOOP_BIN=$FIXLOOP_BIN is not an executable"; exit 1; }
  log "building $BIN"; bun run build >/dev/null
fi

mkdir -p "$OUT"
rm -f "$OUT"/*.txt "$OUT"/*.log "$OUT"/summary.* "$OUT"/tenant.env
WORK=$(mktemp -d /tmp/fixloop-intake.XXXXXX)
declare -A PID=() PORT=()
cleanup() {
  for p in "${PID[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill -KILL "$p" 2>/dev/null || true; done
  if [ "${BENCH_KEEP:-0}" = 1 ]; then log "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

# free_port, start_server, stop_server
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# Every server's HTTP thread (the main thread: its task id is the process id) keeps the server core; every
# other thread of the process (fixloop's processing and checkpointer threads, and the runtime's JIT and GC
# helper threads, for the floors too) goes to the load core: what "the worker never takes intake's core"
# means on a 2-core machine. Threads the runtime starts later inherit the main thread's core, so this runs
# again before each measured run. BENCH_PIN_THREADS=0 leaves every thread of a server on the server core.
PIN_THREADS=${BENCH_PIN_THREADS:-1}
pin_threads() { # pid
  [ "$PIN_THREADS" = 1 ] || return 0
  local t n=0
  for t in /proc/"$1"/task/*; do
    [ "$(basename "$t")" = "$1" ] && continue
    taskset -pc "$LOAD_CPU" "$(basename "$t")" >/dev/null 2>&1 && n=$((n + 1))
  done
  echo "pinned $n helper thread(s) of pid $1 to cpu $LOAD_CPU" >>"$OUT/pinning.log"
}
proc_ticks() { awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$1/stat"; }
# The main (HTTP) thread alone: its task id is the process id.
main_ticks() { awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$1/task/$1/stat"; }
load() { # file port key pid
  pin_threads "$4"
  taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNS" -d"${WARMUP}s" -s bench/widget.lua "http://127.0.0.1:$2" -- "$3" >"$OUT/$1.warmup" 2>&1 ||
    log "warm-up wrk exited $? ($(tail -1 "$OUT/$1.warmup"))"
  pin_threads "$4" # again: threads started during the warm-up
  local t0 m0; t0=$(proc_ticks "$4"); m0=$(main_ticks "$4")
  taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency -s bench/widget.lua "http://127.0.0.1:$2" -- "$3" >"$OUT/$1" 2>&1 ||
    log "wrk exited $? ($(tail -1 "$OUT/$1"))"
  echo "LOAD $(cut -d' ' -f1 /proc/loadavg)" >>"$OUT/$1"
  echo "CPU_TICKS $(($(proc_ticks "$4") - t0)) $(getconf CLK_TCK)" >>"$OUT/$1"
  echo "MAIN_TICKS $(($(main_ticks "$4") - m0)) $(getconf CLK_TCK)" >>"$OUT/$1"
}

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "command: BENCH_ROWS=$ROWS BENCH_DURATION=$DURATION BENCH_WARMUP=$WARMUP BENCH_CONNECTIONS=$CONNS BENCH_ROUNDS=$ROUNDS bash bench/intake.sh"
  echo "fixloop: $BIN (built $(date -u -r "$BIN" +%Y-%m-%dT%H:%M:%SZ)); work tree at git $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "bun: $(bun --version); cpu: $(nproc) x $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/machine.txt"

SIZES="0"; [ "$ROWS" -gt 0 ] && SIZES="0 $ROWS"
for size in $SIZES; do
  dir="$WORK/$size"; mkdir -p "$dir"
  log "seeding $size rows into fixloop, the floor and the bare floor"
  bun bench/seed.ts --bin "$BIN" --data-dir "$dir/fixloop" --floor-db "$dir/floor.db" --bare-db "$dir/bare.db" --out "$dir" --rows "$size" >&2
  # shellcheck disable=SC1091
  source "$dir/tenant.env"
  p=$(free_port 28190); start_server bare "$p" env BARE_DB="$dir/bare.db" BARE_PORT="$p" BARE_PUB_KEY="$PUB_KEY" bun bench/bare-floor.ts; PORT[bare]=$p
  p=$(free_port $((p + 1))); start_server floor "$p" env FLOOR_DB="$dir/floor.db" FLOOR_PORT="$p" FLOOR_ORG_ID="$ORG_ID" \
    FLOOR_APP_ID="$APP_ID" FLOOR_PUB_KEY="$PUB_KEY" FLOOR_SK_KEY="$SK_KEY" bun bench/floor-server.ts; PORT[floor]=$p
  SERVERS="bare floor fixloop"
  FIXLOOPS="fixloop"
  if [ -n "${BENCH_BASELINE_BIN:-}" ]; then SERVERS="$SERVERS baseline"; FIXLOOPS="$FIXLOOPS baseline"; cp -a "$dir/fixloop" "$dir/baseline"; fi
  for s in $FIXLOOPS; do
    bin=$BIN; [ "$s" = baseline ] && bin=$BENCH_BASELINE_BIN
    p=$(free_port $((p + 1))); start_server "$s" "$p" env FIXLOOP_RATE_LIMIT_MULTIPLIER=100000 FIXLOOP_LOG_LEVEL=warn \
      "$bin" serve --host 127.0.0.1 --port "$p" --data-dir "$dir/$s"; PORT[$s]=$p
  done
  # Only the server under load runs: the others are stopped (SIGSTOP), so a fixloop worker draining its
  # backlog never takes the core from another server's turn.
  only() {
    for o in $SERVERS; do
      [ -n "${PID[$o]:-}" ] || continue
      if [ "$o" = "$1" ]; then kill -CONT "${PID[$o]}"; else kill -STOP "${PID[$o]}"; fi
    done
  }
  # fixloop builds its App's similarity index (the newest 100k reports) on the first report after a start:
  # one report, then wait until it is processed, so the rounds measure the steady state.
  for s in $FIXLOOPS; do
    only "$s"
    curl -fs -o /dev/null -X POST -H "Authorization: Bearer $PUB_KEY" -H 'Content-Type: application/json' \
      -d '{"text":"warm-up report"}' "http://127.0.0.1:${PORT[$s]}/v1/feedback"
    bun bench/drain.ts "$dir/$s/fixloop.db" 120 >/dev/null
  done
  for round in $(seq "$ROUNDS"); do
    for s in $SERVERS; do
      log "rows=$size round $round: $s (${WARMUP}s warm-up + ${DURATION}s)"
      only "$s"
      load "$size.$s.r$round.txt" "${PORT[$s]}" "$PUB_KEY" "${PID[$s]}"
    done
  done
  kill -CONT "${PID[bare]}" "${PID[floor]}"; stop_server bare; stop_server floor
  for s in $FIXLOOPS; do
    log "rows=$size: draining $s's backlog alone (at most ${DRAIN_MAX}s)"
    only "$s"
    if [ "${BENCH_DRAIN_PINNED:-0}" != 1 ]; then
      # Alone on the machine now: every thread of the server may run on either core.
      # A thread that ends while taskset walks the list makes it fail: not a reason to stop the run.
      taskset -apc "$SERVER_CPU,$LOAD_CPU" "${PID[$s]}" >/dev/null 2>&1 || true
      echo "drain: every thread of pid ${PID[$s]} on cpus $SERVER_CPU,$LOAD_CPU" >>"$OUT/pinning.log"
    fi
    bun bench/drain.ts "$dir/$s/fixloop.db" "$DRAIN_MAX" "${PID[$s]}" | tee "$OUT/$size.$s.drain.txt" >&2
  done
  for s in $FIXLOOPS; do kill -CONT "${PID[$s]}"; stop_server "$s"; done
  rm -rf "$dir"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"
bun bench/intake-report.ts "$OUT"
