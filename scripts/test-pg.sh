#!/usr/bin/env bash
# The second half of `bun run test`: the HTTP-level tests of the spec's routes again, with every test
# server in PostgreSQL mode (FIXLOOP_TEST_DIALECT=pg: test/harness.ts starts it on a fresh database of the
# file's own PostgreSQL, Redis and s3rver, test/cluster-env.ts). The repository cases already run on both
# dialects in the first half (test/repos/). Kept to ~90 s on a 2-core machine. Not listed, though green on
# PostgreSQL: heavy-reports (a load test, 11 s); events-e2e is not green there yet (after its kill -9 a
# PostgreSQL node waits out the dead node's webhook leases, over a minute by design).
# events-durability is SQLite's by construction: it writes events straight into the data dir's fixloop.db
# while the binary runs (and while it does not), which a PostgreSQL node never reads.
set -uo pipefail
cd "$(dirname "$0")/.."

SUITES=(
  test/smoke.test.ts
  test/spec-binary.test.ts
  test/spec-audit.test.ts
  test/tenancy.test.ts
  test/paging.test.ts
  test/idempotency.test.ts
  test/idempotency-scope.test.ts
  test/errors-limits.test.ts
  test/strict-types.test.ts
  test/json-responses.test.ts
  test/user-token.test.ts
  test/mail-notify.test.ts
  test/mail-optin.test.ts
  test/trackers.test.ts
  test/me-feedback.test.ts
  test/pow.test.ts
  test/spam.test.ts
  test/spam-retention.test.ts
  test/audit-export.test.ts
  test/reporters.test.ts
  test/report-retention.test.ts
  test/removal-successor.test.ts
  test/removal-cost.test.ts
  test/replay.test.ts
  test/address-key.test.ts
  test/cors.test.ts
  test/uploads.test.ts
  test/upload-races.test.ts
  test/auth.test.ts
  test/hostile-input.test.ts
  test/nul-input.test.ts
  test/surrogates.test.ts
  test/events.test.ts
  test/events-streams.test.ts
  test/small-fixes.test.ts
  test/request-log.test.ts
  test/webhooks.test.ts
  test/webhooks-guard.test.ts
  test/chatops.test.ts
  test/lifecycle-events.test.ts
  test/access.test.ts
  test/reauth-outbound.test.ts
  test/heavy-charge.test.ts
  test/internal-error.test.ts
  test/dashboard-api.test.ts
  test/proxy-paths.test.ts
  test/admin-services.test.ts
  test/fsm.test.ts
  test/agent-runs.test.ts
  test/agent-attachments.test.ts
  test/agent-erase.test.ts
  test/admin-throttle.test.ts
  test/git-hooks.test.ts
  test/review-iteration.test.ts
  test/review-queue.test.ts
  test/pr-news-during-iteration.test.ts
  test/merge-race.test.ts
  test/reporters-reach.test.ts
  test/reporters-race.test.ts
  test/idempotency-order.test.ts
  test/agent-guardrail-gaps.test.ts
  test/git-host-guard.test.ts
  test/slack-agent-text.test.ts
  test/password-hash-cost.test.ts
)
# An empty list would make bun run every test file: nothing to do then.
[ ${#SUITES[@]} -eq 0 ] && exit 0

# One PostgreSQL for the whole pass (test/pg-pass-server.ts): each file makes its own databases on it
# (FIXLOOP_TEST_PG_SHARED), instead of starting and stopping a server of its own (~2 s a file). Each file
# still has its own Redis and s3rver: those are shared state a file's nodes sweep and elect leaders in.
info=$(mktemp -u /tmp/fixloop-pg-pass-XXXXXX)
bun test/pg-pass-server.ts "$info" &
pg_pass=$!
trap 'kill "$pg_pass" 2>/dev/null; wait "$pg_pass" 2>/dev/null; rm -f "$info"' EXIT
for _ in $(seq 600); do
  [ -s "$info" ] && break
  kill -0 "$pg_pass" 2>/dev/null || { echo "test-pg: the pass's PostgreSQL did not start" >&2; exit 1; }
  sleep 0.1
done
[ -s "$info" ] || { echo "test-pg: the pass's PostgreSQL was not ready in 60 s" >&2; exit 1; }

# Two worker processes: most suites wait on servers and subprocesses, so two files at once fit two cores.
# The slowest files first (test/timings-pg.json; FIXLOOP_TEST_UPDATE_TIMINGS=1 rewrites it, as in scripts/test.sh).
timings=(--timings=test/timings-pg.json)
[ "${FIXLOOP_TEST_UPDATE_TIMINGS:-}" = 1 ] && timings+=(--update-timings)
# Not passed on to the tests: the binary warns about a FIXLOOP_* setting it does not know (see scripts/test.sh).
unset FIXLOOP_TEST_UPDATE_TIMINGS
# --no-isolate: each worker loads the helpers and the server's modules (the pg driver, s3rver's framework)
# once, not once per file; what the helpers start for a file is stopped after it (test/file-end.ts). The
# 57 files: 330 -> 246 CPU-s, 238 -> 203 s on a machine others loaded too.
FIXLOOP_TEST_PG_SHARED=$info FIXLOOP_TEST_DIALECT=pg bun test --timeout 60000 --parallel=2 --no-isolate "${timings[@]}" "${SUITES[@]}"
status=$?
exit "$status"
