#!/usr/bin/env bash
# `bun run test`: the whole suite, then ONE total. Four bun test runs, each printing its own summary:
#   1. every test file on SQLite (and test/repos/ on both dialects), four files at a time;
#   2. the files that time what they check, alone, one after another: test/write-turns.test.ts (who waits for the
#      write lock; a run of its own, first) and the multi-node files (compiled nodes on one PostgreSQL; wake-up lags, take-over
#      within 30 s after a kill -9, a node stopped with SIGSTOP on a 2 s lease, no keyed submission waiting out a deadlock), which two other files' servers and Chromium on two cores would slow past their bounds;
#   3. the HTTP suites again with every test server on PostgreSQL (scripts/test-pg.sh).
# The parallel runs start the slowest files first (test/timings.json, test/timings-pg.json: see below).
# The last line is "total: N passed, N failed, N skipped" over all the runs; the exit status is non-zero when
# any run failed (also when a run crashed before printing its summary).
set -uo pipefail
cd "$(dirname "$0")/.."

bash scripts/test-setup.sh || exit 1

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
run() {
  "$@" 2>&1 | tee -a "$log"
  local s=${PIPESTATUS[0]}
  [ "$s" -eq 0 ] || status=$s
}
ALONE='test/{write-turns,cluster-mode,cluster-clock,cluster-stall,pg-intake-deadlock}.test.ts'
# --timings: the parallel runs start the slowest files first (test/timings.json, measured per file), so no
# long file starts last beside idle workers; a file missing there (a new one) starts before the known ones.
# FIXLOOP_TEST_UPDATE_TIMINGS=1 writes this run's durations back (then commit the files).
timings=(--timings=test/timings.json)
update_timings=${FIXLOOP_TEST_UPDATE_TIMINGS:-}
[ "$update_timings" = 1 ] && timings+=(--update-timings)
# Not passed on to the tests: the binary warns about a FIXLOOP_* setting it does not know, and tests read its stderr.
unset FIXLOOP_TEST_UPDATE_TIMINGS
# --no-isolate: each of the four workers loads the test helpers and the server's modules once, not once per
# file (~0.3 CPU-s a file, ~270 files). What a helper starts for a file is stopped after that file all the
# same (test/file-end.ts); a file's own state stays its own to clean up, as it had to be before.
# Four at a time on two cores: most files wait on servers, subprocesses and Chromium. Measured on this
# run's 291 files (2026-12-03, 2 cores): three at a time 849 s wall for 1,101 CPU-s (1.3 cores busy), four
# 677 s for 971 CPU-s, no failure; five failed a Chromium test's 30 s wait for a dialog (test/sso-reauth).
run bun test --timeout 60000 --parallel=4 --no-isolate "${timings[@]}" "--path-ignore-patterns=$ALONE"
# Waits (at most 30 s) until the CPUs are mostly idle: the servers, PostgreSQL instances and Chromium the
# parallel run stopped may still be exiting, and the next files time what they check by the wall clock.
# The share of busy CPU time over each second, from /proc/stat; below 25 % is quiet. TEST_QUIET_WAIT_SECONDS
# (default 30) bounds the wait; 0 skips it (test/install.test.ts runs this script with a fake bun beside a
# busy suite).
wait_quiet() {
  local tries=${TEST_QUIET_WAIT_SECONDS:-30} i a b
  [ -r /proc/stat ] && [ "$tries" -gt 0 ] 2>/dev/null || return 0
  for i in $(seq "$tries"); do
    a=$(awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat)
    sleep 1
    b=$(awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat)
    echo "$a $b" | awk '{ exit !(($4 - $2) > 0 && ($3 - $1) / ($4 - $2) < 0.25) }' && return 0
  done
}
# write-turns first and on its own: in one run with the multi-node files bun ordered it after them, and the
# three nodes they had just stopped still used the CPU it times (a CI flake: 2 transactions overtaken, not 1);
# right after the parallel run, that run's stopping processes did the same once (four files at a time).
wait_quiet
run bun test --timeout 60000 test/write-turns.test.ts
wait_quiet
run bun test --timeout 60000 test/cluster-mode.test.ts test/cluster-clock.test.ts test/cluster-stall.test.ts test/pg-intake-deadlock.test.ts
run env FIXLOOP_TEST_UPDATE_TIMINGS="$update_timings" bash scripts/test-pg.sh

sum() { grep -Eo "^ *[0-9]+ $1\$" "$log" | grep -Eo '[0-9]+' | awk '{s+=$1} END {print s+0}'; }
pass=$(sum pass)
fail=$(sum fail)
skip=$(sum skip)
# A run that failed without counting a failure (a crash, a file that did not load) still fails the total.
if [ "$status" -ne 0 ] && [ "$fail" = "0" ]; then fail=1; fi
# The failures again, last: a CI log shows its tail, and four runs' worth of passes bury the failing names.
if grep -qE '^\(fail\)' "$log"; then
  echo
  echo "failed tests:"
  # Each with its file and what bun printed of its error (the expectation's diff and where it failed, at
  # most 40 lines): a failing top-level hook is named only "(unnamed)", and a CI log keeps just its tail.
  # Once each, with the file it ran in: bun repeats a run's failures at its end, under whatever file it
  # printed last.
  awk '/^[^ (].*\.test\.ts:$/ { file = substr($0, 1, length($0) - 1); n = 0; grab = 0 }
       /^error: / { n = 0; grab = 1 }
       grab && n < 40 && $0 != "" { err[n++] = substr($0, 1, 300) }
       /^\(fail\)/ { name = substr($0, 1, 300); if (!seen[name]++) { print name "  [" file "]"; for (i = 0; i < n; i++) if (err[i] !~ /^\(fail\)/) print "    " err[i] }; n = 0; grab = 0 }' "$log"
fi
echo
echo "total: ${pass} passed, ${fail} failed, ${skip} skipped"
exit "$status"
