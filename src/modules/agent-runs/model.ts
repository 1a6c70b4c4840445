/** The agent run resource (spec 2.4), plus fixloop's additions `summary` and `outputTail`. */
import { t } from 'elysia'
import { ID_PATTERN } from '../../core/ids'
import { oneOf, int } from '../../core/schema'

const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(s: T) => t.Union([s, t.Null()])

export const RUN_STATUSES = ['running', 'succeeded', 'failed', 'guardrailed'] as const

export const AgentRun = t.Object(
  {
    id: t.String({ pattern: ID_PATTERN }),
    appId: t.String({ pattern: ID_PATTERN }),
    feedbackId: t.String({ pattern: ID_PATTERN }),
    provider: t.String({ description: 'claude-code, codex, aider, command (or none when no repository was connected)' }),
    model: t.String({ description: 'The model the agent reported using, else the one the connection names (`--model`); empty when neither says (spec 2.4 types it a string).' }),
    status: oneOf(RUN_STATUSES),
    tokensIn: int(),
    tokensOut: int(),
    costUsd: t.Number(),
    prUrl: t.Union([t.String(), t.Null()], {
      description:
        'The pull/merge request the run opened. Null when it opened none: the run failed or was guardrailed, or it succeeded in branch mode (`--host none` or `--pr-mode branch`), where it pushed `branch` (`fixloop/<feedback id>`) and the report moved to `pr_opened` with `mergeRequestUrl` null.',
    }),
    branch: t.String(),
    guardrailReason: Nullable(t.String()),
    error: Nullable(t.String()),
    timings: t.Object(
      { prepareMs: int(), cloneMs: int(), agentMs: int(), pushMs: int(), prMs: int() },
      { additionalProperties: false },
    ),
    trigger: t.Union([t.Literal('report'), t.Literal('review')], {
      description: 'Additive: what started the run. `report`: the report was queued; `review`: a review asked for changes on its pull request and the agent iterated on the same branch (docs/agents.md "Review iteration").',
    }),
    summary: Nullable(t.String({ description: "The agent's own summary of its change" })),
    outputTail: Nullable(t.String({ description: 'The last 16 KB of the agent (and verify) output, secrets removed' })),
    startedAt: Nullable(t.String({ format: 'date-time' })),
    endedAt: Nullable(t.String({ format: 'date-time' })),
    createdAt: t.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
)

/** A review waiting for its iteration on the report's pull request (who and when; the text goes to the agent only). */
export const PendingReview = t.Object(
  {
    author: t.Union([t.String(), t.Null()], { description: "The reviewer's login as the host named it (sanitized), if any" }),
    receivedAt: t.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
)

export const AgentRunList = t.Object(
  {
    data: t.Array(AgentRun),
    pendingReviews: t.Array(PendingReview, {
      description: 'Reviews asking for changes that wait for a review iteration (the App\'s run slot was busy), oldest first; they run as one iteration. docs/agents.md "Review iteration".',
    }),
  },
  { additionalProperties: false },
)
