/**
 * FIXLOOP_OUTBOUND_TIMEOUT: the deadline of each call fixloop makes to an issue tracker's or a git host's
 * API (src/trackers/*, src/agent/hosts.ts), the whole exchange included (src/core/outbound-http.ts). The
 * setting is the deadline of an ordinary call (GitHub, GitLab and Gitea issues; reading a pull request's
 * state); the two kinds of call that always had longer ones keep them in proportion, so the default leaves
 * every deadline where it was: Jira Cloud and Linear a third longer (20 s), opening a pull/merge request
 * twice it (30 s: the host computes the diff before it answers).
 *
 * Whole seconds from 1 to 20. Below a second a healthy tracker across the internet fails on an ordinary
 * TLS handshake. Above 20, the longest call (Jira or Linear, 26.7 s at 20) would no longer fit two limits
 * fixloop keeps: a tracker connect through the API (`PUT /v1/apps/:id/tracker`, the dashboard) waits for
 * the tracker inside the request, which the HTTP server cuts unanswered after 30 s idle; and a tracker
 * push's longest round (an update and a comment, or a Jira create and its retry: two calls, 53.3 s at 20)
 * must fit in the 55 s a job has of the worker's 60 s lease (core/job-budget.ts), else no run of it would
 * get a round done.
 */
export const OUTBOUND_TIMEOUT_SECONDS_DEFAULT = 15
export const OUTBOUND_TIMEOUT_SECONDS_MIN = 1
export const OUTBOUND_TIMEOUT_SECONDS_MAX = 20
export const OUTBOUND_TIMEOUT_MS_DEFAULT = OUTBOUND_TIMEOUT_SECONDS_DEFAULT * 1000

/** Jira Cloud's and Linear's deadline for `outboundMs` (FIXLOOP_OUTBOUND_TIMEOUT): a third longer, 20 s by default. */
export const saasTrackerDeadlineMs = (outboundMs: number): number => Math.round((outboundMs * 4) / 3)

/** Opening a pull/merge request's deadline for `outboundMs` (FIXLOOP_OUTBOUND_TIMEOUT): twice it, 30 s by default. */
export const openRequestDeadlineMs = (outboundMs: number): number => 2 * outboundMs
