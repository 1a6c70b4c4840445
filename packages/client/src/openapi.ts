/**
 * Generated from the server's /openapi.json by scripts/gen-types.ts: do not edit by hand.
 */
/* eslint-disable */

export interface AppList {
  data: {
    id: string;
    slug: string;
    name: string;
    description: string;
    /**
     * Prefix pub_. Safe to ship to browsers.
     */
    publicKey: string;
    publicSubmissionEnabled: boolean;
    processingMode: "manual" | "auto_pr";
    batchEnabled: boolean;
    batchWindowHours: number;
    allowedOrigins: string[];
    proofOfWork: "off" | "normal" | "high";
    /**
     * Whether reports classified as spam still emit events (webhooks, Slack, the feed); default false
     */
    spamEvents: boolean;
    /**
     * Days a report stays in the spam folder before it is deleted with its attachments (0: kept forever); default 30
     */
    spamRetentionDays: number;
    /**
     * Days a report is kept before it is deleted with its attachments (0: kept forever); default 0
     */
    retentionDays: number;
    replay: {
      mode: "off" | "masked" | "inputs";
      /**
       * Seconds of the page the widget keeps in memory (default 60)
       */
      seconds: number;
    };
    createdAt: string;
  }[];
}

export interface FeedbackSubmitResult {
  /**
   * 24-character lowercase hex id
   */
  id: string;
  status:
    | "received"
    | "sanitizing"
    | "sanitized"
    | "awaiting_manual"
    | "queued"
    | "agent_running"
    | "pr_opened"
    | "resolved"
    | "failed"
    | "archived";
}

export interface FeedbackSubmitParams {
  text: string;
  severity?: "low" | "medium" | "high" | null;
  /**
   * Absolute URL of the page
   */
  url?: string;
  userAgent?: string;
  viewport?: {
    w: number;
    h: number;
    dpr: number;
  };
  /**
   * @maxItems 500
   */
  consoleLogs?: {
    level: "debug" | "trace" | "log" | "info" | "warn" | "error";
    message: string;
    /**
     * Epoch milliseconds
     */
    ts: number;
  }[];
  /**
   * @maxItems 10
   */
  attachments?: {
    key: string;
    kind: "screenshot" | "recording" | "attachment" | "replay";
    contentType: string;
    /**
     * At most 15 MB (413 payload_too_large above)
     */
    byteSize: number;
    width?: number;
    height?: number;
  }[];
  componentTarget?: {
    name: string;
    /**
     * Free-form, e.g. { selector, role, text }; at most 4 KB of JSON
     */
    meta?: {
      /**
       * This interface was referenced by `undefined`'s JSON-Schema definition
       * via the `patternProperty` "^(.*)$".
       */
      [k: string]: unknown | undefined;
    };
    /**
     * CSS pixels relative to the page; each value within ±1,000,000
     */
    bbox?: {
      x: number;
      y: number;
      w: number;
      h: number;
    };
    screenshotKey?: string;
  };
  /**
   * At most 4 KB of JSON
   */
  metadata?: {
    /**
     * This interface was referenced by `undefined`'s JSON-Schema definition
     * via the `patternProperty` "^(.*)$".
     */
    [k: string]: unknown | undefined;
  };
  identity?: {
    email?: string;
    name?: string;
    externalUserId?: string;
  };
  /**
   * The reporter asks to be emailed once the report is resolved (docs/email.md). Needs identity.email (public mode) or an email in the user token's ctx (private mode), else 400 invalid_body. The address is stored encrypted and used only for that mail.
   */
  notifyEmail?: boolean;
  /**
   * Signals of the widget (abuse defence, docs/api.md): a report that trips them is still answered 201, and classified as spam
   */
  clientSignals?: {
    /**
     * The widget's hidden field's content (a person leaves it empty)
     */
    honeypot?: string;
    /**
     * Milliseconds between the form opening and its submission
     */
    formMs?: number;
  };
}

export interface UploadUrl {
  /**
   * Reference it in attachments[].key or componentTarget.screenshotKey
   */
  key: string;
  /**
   * Absolute URL to PUT exactly byteSize bytes to
   */
  url: string;
  method: "PUT";
  /**
   * Headers the PUT must carry
   */
  headers: {
    /**
     * This interface was referenced by `undefined`'s JSON-Schema definition
     * via the `patternProperty` "^(.*)$".
     */
    [k: string]: string | undefined;
  };
  expiresAt: string;
}

export interface UploadUrlParams {
  /**
   * One of: image/png, image/jpeg, image/webp, image/gif, image/avif, text/plain, application/json, application/pdf, video/webm, video/mp4, application/gzip
   */
  contentType: string;
  /**
   * Exact size of the object to PUT; at most 15 MB (413 above)
   */
  byteSize: number;
  kind: "screenshot" | "attachment" | "recording" | "replay";
  filename?: string;
}

export interface FeedbackPage {
  data: {
    /**
     * 24-character lowercase hex id
     */
    id: string;
    /**
     * 24-character lowercase hex id
     */
    appId: string;
    status:
      | "received"
      | "sanitizing"
      | "sanitized"
      | "awaiting_manual"
      | "queued"
      | "agent_running"
      | "pr_opened"
      | "resolved"
      | "failed"
      | "archived";
    submittedBy: {
      mode: "public" | "private";
      externalUserId: string | null;
      email: string | null;
      name: string | null;
    };
    severity: "low" | "medium" | "high" | null;
    text: string;
    url: string | null;
    createdAt: string;
    processedAt: string | null;
    /**
     * The pull/merge request the agent run opened. Null on a `pr_opened` report when the run opened none: the App's repository is connected with `--host none` or `--pr-mode branch`, so the run pushed its branch `fixloop/<feedback id>` (the agent run's `branch`) and stopped there. Null in every other status.
     */
    mergeRequestUrl: string | null;
    /**
     * 24-character lowercase hex id
     */
    duplicateOfId: string | null;
    duplicateCount: number;
    theme: string | null;
    consolidatedText: string | null;
    lastDuplicateAt: string | null;
    /**
     * A lead of the same App this report resembles, not close enough to merge automatically: confirm with POST /v1/feedback/:id/merge {leadId: id}, reject with POST /v1/feedback/:id/reject-suggestion. Null when there is none, once the report is a duplicate, and when the suggested lead no longer takes duplicates (archived, resolved, gone); a suggested lead merged since into another lead is shown as that lead.
     */
    suggestedDuplicateOf: {
      /**
       * 24-character lowercase hex id
       */
      id: string;
      score: number;
      reason: string;
    } | null;
    /**
     * Set when the report is in the spam folder; null otherwise
     */
    spam: {
      score: number;
      /**
       * The signals that fired (docs/api.md "Spam classification")
       */
      reasons: string[];
      markedAt: string;
    } | null;
    /**
     * On a duplicate: how it became one. Null on a lead.
     */
    duplicateMatch: {
      /**
       * True when clustering merged it, false for a merge by hand
       */
      automatic: boolean;
      /**
       * The merge's score (a merge by hand: the confirmed suggestion's score, else null)
       */
      score: number | null;
      /**
       * Why it was merged, e.g. "strong similarity 0.81"; null for a merge by hand of a pair not suggested
       */
      reason: string | null;
    } | null;
    /**
     * The report's issue in the App's tracker (a duplicate shows its lead's); null when it has none. docs/trackers.md.
     */
    trackerIssue: {
      kind: "github" | "gitlab" | "gitea" | "jira" | "linear";
      /**
       * The tracker project the issue is in (owner/repo, group/project, Jira key, Linear team); another than the connection's when the App's tracker moved since: that link is no longer synced.
       */
      project: string | null;
      /**
       * #12, PROJ-7, ENG-3; null until created.
       */
      key: string | null;
      url: string | null;
      /**
       * The tracker's state name as last seen.
       */
      state: string | null;
      syncState: "pending" | "synced" | "failing" | "deleted";
      lastError: string | null;
      syncedAt: string | null;
    } | null;
  }[];
  /**
   * 24-character lowercase hex id
   */
  nextCursor: string | null;
}

export interface FeedbackListParams {
  /**
   * 24-character lowercase hex id
   */
  appId?: string;
  status?:
    | "received"
    | "sanitizing"
    | "sanitized"
    | "awaiting_manual"
    | "queued"
    | "agent_running"
    | "pr_opened"
    | "resolved"
    | "failed"
    | "archived";
  /**
   * The id of the last item of the previous page
   */
  cursor?: string;
  limit?: number;
  includeDuplicates?: boolean;
  spam?: "exclude" | "only" | "include";
}

export interface FeedbackItem {
  /**
   * 24-character lowercase hex id
   */
  id: string;
  /**
   * 24-character lowercase hex id
   */
  appId: string;
  status:
    | "received"
    | "sanitizing"
    | "sanitized"
    | "awaiting_manual"
    | "queued"
    | "agent_running"
    | "pr_opened"
    | "resolved"
    | "failed"
    | "archived";
  submittedBy: {
    mode: "public" | "private";
    externalUserId: string | null;
    email: string | null;
    name: string | null;
  };
  severity: "low" | "medium" | "high" | null;
  text: string;
  url: string | null;
  createdAt: string;
  processedAt: string | null;
  /**
   * The pull/merge request the agent run opened. Null on a `pr_opened` report when the run opened none: the App's repository is connected with `--host none` or `--pr-mode branch`, so the run pushed its branch `fixloop/<feedback id>` (the agent run's `branch`) and stopped there. Null in every other status.
   */
  mergeRequestUrl: string | null;
  /**
   * 24-character lowercase hex id
   */
  duplicateOfId: string | null;
  duplicateCount: number;
  theme: string | null;
  consolidatedText: string | null;
  lastDuplicateAt: string | null;
  /**
   * A lead of the same App this report resembles, not close enough to merge automatically: confirm with POST /v1/feedback/:id/merge {leadId: id}, reject with POST /v1/feedback/:id/reject-suggestion. Null when there is none, once the report is a duplicate, and when the suggested lead no longer takes duplicates (archived, resolved, gone); a suggested lead merged since into another lead is shown as that lead.
   */
  suggestedDuplicateOf: {
    /**
     * 24-character lowercase hex id
     */
    id: string;
    score: number;
    reason: string;
  } | null;
  /**
   * Set when the report is in the spam folder; null otherwise
   */
  spam: {
    score: number;
    /**
     * The signals that fired (docs/api.md "Spam classification")
     */
    reasons: string[];
    markedAt: string;
  } | null;
  /**
   * On a duplicate: how it became one. Null on a lead.
   */
  duplicateMatch: {
    /**
     * True when clustering merged it, false for a merge by hand
     */
    automatic: boolean;
    /**
     * The merge's score (a merge by hand: the confirmed suggestion's score, else null)
     */
    score: number | null;
    /**
     * Why it was merged, e.g. "strong similarity 0.81"; null for a merge by hand of a pair not suggested
     */
    reason: string | null;
  } | null;
  /**
   * The report's issue in the App's tracker (a duplicate shows its lead's); null when it has none. docs/trackers.md.
   */
  trackerIssue: {
    kind: "github" | "gitlab" | "gitea" | "jira" | "linear";
    /**
     * The tracker project the issue is in (owner/repo, group/project, Jira key, Linear team); another than the connection's when the App's tracker moved since: that link is no longer synced.
     */
    project: string | null;
    /**
     * #12, PROJ-7, ENG-3; null until created.
     */
    key: string | null;
    url: string | null;
    /**
     * The tracker's state name as last seen.
     */
    state: string | null;
    syncState: "pending" | "synced" | "failing" | "deleted";
    lastError: string | null;
    syncedAt: string | null;
  } | null;
  updatedAt: string;
  /**
   * Why the item is failed; null otherwise
   */
  failureReason: string | null;
  /**
   * Why the item waits where it is (e.g. queued on an App with no repository connected); null when it is not held up
   */
  statusReason: string | null;
  attachments: {
    key: string;
    kind: "screenshot" | "recording" | "attachment" | "replay";
    contentType: string;
    /**
     * At most 15 MB (413 payload_too_large above)
     */
    byteSize: number;
    width?: number;
    height?: number;
    /**
     * Short-lived download URL; a replay has one only once it is scrubbed (replayState ready)
     */
    url?: string;
    replayState?: "pending" | "ready" | "unreadable";
  }[];
  consoleLogs: {
    level: "debug" | "trace" | "log" | "info" | "warn" | "error";
    message: string;
    /**
     * Epoch milliseconds
     */
    ts: number;
  }[];
  userAgent: string | null;
  viewport: {
    w: number;
    h: number;
    dpr: number;
  } | null;
  componentTarget: {
    name: string;
    /**
     * Free-form, e.g. { selector, role, text }; at most 4 KB of JSON
     */
    meta?: {
      /**
       * This interface was referenced by `undefined`'s JSON-Schema definition
       * via the `patternProperty` "^(.*)$".
       */
      [k: string]: unknown | undefined;
    };
    /**
     * CSS pixels relative to the page; each value within ±1,000,000
     */
    bbox?: {
      x: number;
      y: number;
      w: number;
      h: number;
    };
    screenshotKey?: string;
    /**
     * Short-lived download URL of screenshotKey
     */
    screenshotUrl?: string;
  } | null;
  /**
   * The submission's `metadata`, as sent
   */
  submissionMeta: {
    /**
     * This interface was referenced by `undefined`'s JSON-Schema definition
     * via the `patternProperty` "^(.*)$".
     */
    [k: string]: unknown | undefined;
  } | null;
  /**
   * Private mode: the user token's ctx claim
   */
  userContext: {
    /**
     * This interface was referenced by `undefined`'s JSON-Schema definition
     * via the `patternProperty` "^(.*)$".
     */
    [k: string]: unknown | undefined;
  } | null;
  /**
   * Per-rule counts of values the sanitizer replaced
   */
  redactions: {
    /**
     * This interface was referenced by `undefined`'s JSON-Schema definition
     * via the `patternProperty` "^(.*)$".
     */
    [k: string]: number | undefined;
  };
  /**
   * @maxItems 200
   */
  duplicates: {
    /**
     * 24-character lowercase hex id
     */
    id: string;
    text: string;
    submittedBy: {
      mode: "public" | "private";
      externalUserId: string | null;
      email: string | null;
      name: string | null;
    };
    createdAt: string;
  }[];
}

export interface FeedbackUpdateResult {
  /**
   * 24-character lowercase hex id
   */
  id: string;
  status:
    | "received"
    | "sanitizing"
    | "sanitized"
    | "awaiting_manual"
    | "queued"
    | "agent_running"
    | "pr_opened"
    | "resolved"
    | "failed"
    | "archived";
  /**
   * Set when the report is in the spam folder; null otherwise
   */
  spam?: {
    score: number;
    /**
     * The signals that fired (docs/api.md "Spam classification")
     */
    reasons: string[];
    markedAt: string;
  } | null;
}

export interface FeedbackUpdateParams {
  status?: "queued" | "archived";
  /**
   * false: not spam (restores the report into the normal lifecycle); true: mark as spam by hand. Not with status.
   */
  spam?: boolean;
}

export interface SimilarList {
  data: {
    id: string;
    score: number;
    text: string;
    duplicateOfId: string | null;
  }[];
}

export interface SimilarParams {
  /**
   * Default 5, at most 50
   */
  limit?: number;
}

export interface MergeParams {
  leadId: string;
}

export interface AppTriageState {
  bars: {
    /**
     * Merged automatically at this score or above
     */
    merge: number;
    /**
     * Merged at this score or above when another signal agrees: the same component, console error, stack trace, (near) title, or a specific file, path or setting named in both titles
     */
    corroboratedMerge: number;
    /**
     * Below the merge bars and at least this score: the lead is suggested instead
     */
    suggest: number;
  };
  /**
   * Arrival (docs/triage.md "Arrival")
   */
  arrival: {
    /**
     * Whether the App's duplicates come in bursts, learned from its clusters: 0 (arrival order says nothing), up to 1 (a duplicate arrives close to the report it duplicates)
     */
    locality: number;
    /**
     * The most arrival adds to a /similar score or a suggestion score (a report that arrived right beside); the scores an automatic merge compares are not changed
     */
    bonusAtMost: number;
    /**
     * True: a report that would merge into a cluster last reported more than half of the App's reports ago is suggested instead
     */
    longAgoBlock: boolean;
    /**
     * Merged automatically at this score or above (halfway between the corroborated and the merge bar) when the lead arrived within `mergeWithin` of the report; null: arrival too weak to corroborate a merge
     */
    mergeBar: number | null;
    /**
     * How close in arrival, as a share of the App's reports, a lead must have arrived for `mergeBar` (0.13: within 13 % of them); null with `mergeBar`
     */
    mergeWithin: number | null;
  };
  learned: {
    /**
     * Both merge bars at least this, after an automatic merge was undone; null: none was
     */
    raisedTo: number | null;
    /**
     * The lowest bar the decisions prove ≥ 98 % right (at least 50 of them); null: not proven yet
     */
    provenBar: number | null;
    /**
     * The suggestion floor at least this: people rejected most suggestions scoring below it; null: not raised
     */
    suggestRaisedTo: number | null;
    decisions: {
      confirmed: number;
      rejected: number;
      unmerged: number;
    };
  };
  /**
   * With ?unmergeScore: the merge bars once an automatic merge of that score were undone
   */
  afterUnmerge?: {
    merge: number;
    corroboratedMerge: number;
  };
  /**
   * The abuse defence (docs/api.md "Spam classification")
   */
  spam: {
    /**
     * Reports in the App's spam folder (counted up to 100,000)
     */
    inFolder: number;
    /**
     * Reports people marked "not spam"
     */
    notSpam: number;
    /**
     * Reports people marked spam by hand
     */
    markedSpam: number;
    /**
     * What the decisions taught: reason → weight factor (absent: 1)
     */
    factors: {
      /**
       * This interface was referenced by `undefined`'s JSON-Schema definition
       * via the `patternProperty` "^(.*)$".
       */
      [k: string]: number | undefined;
    };
  };
}

export interface AgentRun {
  id: string;
  appId: string;
  feedbackId: string;
  /**
   * claude-code, codex, aider, command (or none when no repository was connected)
   */
  provider: string;
  /**
   * The model the agent reported using, else the one the connection names (`--model`); empty when neither says (spec 2.4 types it a string).
   */
  model: string;
  status: "running" | "succeeded" | "failed" | "guardrailed";
  tokensIn: number;
  tokensOut: number;
  costUsd: number;
  /**
   * The pull/merge request the run opened. Null when it opened none: the run failed or was guardrailed, or it succeeded in branch mode (`--host none` or `--pr-mode branch`), where it pushed `branch` (`fixloop/<feedback id>`) and the report moved to `pr_opened` with `mergeRequestUrl` null.
   */
  prUrl: string | null;
  branch: string;
  guardrailReason: string | null;
  error: string | null;
  timings: {
    prepareMs: number;
    cloneMs: number;
    agentMs: number;
    pushMs: number;
    prMs: number;
  };
  trigger: "report" | "review";
  /**
   * The agent's own summary of its change
   */
  summary: string | null;
  /**
   * The last 16 KB of the agent (and verify) output, secrets removed
   */
  outputTail: string | null;
  startedAt: string | null;
  endedAt: string | null;
  createdAt: string;
}

export interface AgentRunList {
  data: {
    id: string;
    appId: string;
    feedbackId: string;
    /**
     * claude-code, codex, aider, command (or none when no repository was connected)
     */
    provider: string;
    /**
     * The model the agent reported using, else the one the connection names (`--model`); empty when neither says (spec 2.4 types it a string).
     */
    model: string;
    status: "running" | "succeeded" | "failed" | "guardrailed";
    tokensIn: number;
    tokensOut: number;
    costUsd: number;
    /**
     * The pull/merge request the run opened. Null when it opened none: the run failed or was guardrailed, or it succeeded in branch mode (`--host none` or `--pr-mode branch`), where it pushed `branch` (`fixloop/<feedback id>`) and the report moved to `pr_opened` with `mergeRequestUrl` null.
     */
    prUrl: string | null;
    branch: string;
    guardrailReason: string | null;
    error: string | null;
    timings: {
      prepareMs: number;
      cloneMs: number;
      agentMs: number;
      pushMs: number;
      prMs: number;
    };
    trigger: "report" | "review";
    /**
     * The agent's own summary of its change
     */
    summary: string | null;
    /**
     * The last 16 KB of the agent (and verify) output, secrets removed
     */
    outputTail: string | null;
    startedAt: string | null;
    endedAt: string | null;
    createdAt: string;
  }[];
  /**
   * Reviews asking for changes that wait for a review iteration (the App's run slot was busy), oldest first; they run as one iteration. docs/agents.md "Review iteration".
   */
  pendingReviews: {
    /**
     * The reviewer's login as the host named it (sanitized), if any
     */
    author: string | null;
    receivedAt: string;
  }[];
}

export interface MintResult {
  token: string;
  expiresInSeconds: number;
}

export interface MintParams {
  /**
   * The end-user id in your system
   */
  sub: string;
  /**
   * At most 2 KB of JSON; email and name are shown as the submitter
   */
  ctx?: {
    /**
     * This interface was referenced by `undefined`'s JSON-Schema definition
     * via the `patternProperty` "^(.*)$".
     */
    [k: string]: unknown | undefined;
  };
  /**
   * Default 3600
   */
  expiresInSeconds?: number;
}

export interface EventPage {
  /**
   * Items: An event; consumers must ignore types they do not know (the list grows)
   */
  data: (
    | EventFeedbackReceived
    | EventFeedbackStatusChanged
    | EventFeedbackDuplicateAttached
    | EventFeedbackDuplicateSuggested
    | EventFeedbackUnmerged
    | EventFeedbackResolved
    | EventAgentRunStarted
    | EventAgentRunPhase
    | EventAgentRunSucceeded
    | EventAgentRunFailed
    | EventAgentRunGuardrailed
    | EventWebhookDisabled
    | EventWebhookTest
  )[];
  /**
   * Pass as `after` for the next page
   */
  nextAfter: number;
}
/**
 * The feedback.received event
 */
export interface EventFeedbackReceived {
  /**
   * Stable event id; the webhook-id header of its deliveries
   */
  id: string;
  /**
   * Rises by one per Org with every event: the cursor
   */
  seq: number;
  type: "feedback.received";
  createdAt: string;
  /**
   * 24-character lowercase hex id
   */
  appId: string | null;
  data: {
    /**
     * 24-character lowercase hex id
     */
    feedbackId: string;
    status:
      | "received"
      | "sanitizing"
      | "sanitized"
      | "awaiting_manual"
      | "queued"
      | "agent_running"
      | "pr_opened"
      | "resolved"
      | "failed"
      | "archived";
  };
}
/**
 * The feedback.status_changed event
 */
export interface EventFeedbackStatusChanged {
  /**
   * Stable event id; the webhook-id header of its deliveries
   */
  id: string;
  /**
   * Rises by one per Org with every event: the cursor
   */
  seq: number;
  type: "feedback.status_changed";
  createdAt: string;
  /**
   * 24-character lowercase hex id
   */
  appId: string | null;
  data: {
    /**
     * 24-character lowercase hex id
     */
    feedbackId: string;
    from:
      | "received"
      | "sanitizing"
      | "sanitized"
      | "awaiting_manual"
      | "queued"
      | "agent_running"
      | "pr_opened"
      | "resolved"
      | "failed"
      | "archived";
    to:
      | "received"
      | "sanitizing"
      | "sanitized"
      | "awaiting_manual"
      | "queued"
      | "agent_running"
      | "pr_opened"
      | "resolved"
      | "failed"
      | "archived";
    reason?: string | null;
  };
}
/**
 * The feedback.duplicate_attached event
 */
export interface EventFeedbackDuplicateAttached {
  /**
   * Stable event id; the webhook-id header of its deliveries
   */
  id: string;
  /**
   * Rises by one per Org with every event: the cursor
   */
  seq: number;
  type: "feedback.duplicate_attached";
  createdAt: string;
  /**
   * 24-character lowercase hex id
   */
  appId: string | null;
  data: {
    /**
     * 24-character lowercase hex id
     */
    feedbackId: string;
    /**
     * 24-character lowercase hex id
     */
    leadFeedbackId: string;
    duplicateCount: number;
    manual: boolean;
    /**
     * True when clustering merged it, false for a merge by hand (absent on events recorded before 0.2)
     */
    automatic?: boolean;
    /**
     * The merge's score; null for a merge by hand that confirmed no suggestion
     */
    score?: number | null;
  };
}
/**
 * The feedback.duplicate_suggested event
 */
export interface EventFeedbackDuplicateSuggested {
  /**
   * Stable event id; the webhook-id header of its deliveries
   */
  id: string;
  /**
   * Rises by one per Org with every event: the cursor
   */
  seq: number;
  type: "feedback.duplicate_suggested";
  createdAt: string;
  /**
   * 24-character lowercase hex id
   */
  appId: string | null;
  data: {
    /**
     * 24-character lowercase hex id
     */
    feedbackId: string;
    /**
     * 24-character lowercase hex id
     */
    leadFeedbackId: string;
    score: number;
  };
}
/**
 * The feedback.unmerged event
 */
export interface EventFeedbackUnmerged {
  /**
   * Stable event id; the webhook-id header of its deliveries
   */
  id: string;
  /**
   * Rises by one per Org with every event: the cursor
   */
  seq: number;
  type: "feedback.unmerged";
  createdAt: string;
  /**
   * 24-character lowercase hex id
   */
  appId: string | null;
  data: {
    /**
     * 24-character lowercase hex id
     */
    feedbackId: string;
    /**
     * 24-character lowercase hex id
     */
    leadFeedbackId: string;
    duplicateCount: number;
  };
}
/**
 * The feedback.resolved event
 */
export interface EventFeedbackResolved {
  /**
   * Stable event id; the webhook-id header of its deliveries
   */
  id: string;
  /**
   * Rises by one per Org with every event: the cursor
   */
  seq: number;
  type: "feedback.resolved";
  createdAt: string;
  /**
   * 24-character lowercase hex id
   */
  appId: string | null;
  data: {
    /**
     * 24-character lowercase hex id
     */
    feedbackId: string;
    /**
     * 24-character lowercase hex id
     */
    leadFeedbackId: string;
    /**
     * The merged pull/merge request
     */
    prUrl: string | null;
    /**
     * The submitter's `sub` from the user token, for a report submitted in private mode; null otherwise. Never the report's text or email.
     */
    externalUserId: string | null;
  };
}
/**
 * The agent_run.started event
 */
export interface EventAgentRunStarted {
  /**
   * Stable event id; the webhook-id header of its deliveries
   */
  id: string;
  /**
   * Rises by one per Org with every event: the cursor
   */
  seq: number;
  type: "agent_run.started";
  createdAt: string;
  /**
   * 24-character lowercase hex id
   */
  appId: string | null;
  data: {
    /**
     * 24-character lowercase hex id
     */
    runId: string;
    /**
     * 24-character lowercase hex id
     */
    feedbackId: string;
    provider: string;
  };
}
/**
 * The agent_run.phase event
 */
export interface EventAgentRunPhase {
  /**
   * Stable event id; the webhook-id header of its deliveries
   */
  id: string;
  /**
   * Rises by one per Org with every event: the cursor
   */
  seq: number;
  type: "agent_run.phase";
  createdAt: string;
  /**
   * 24-character lowercase hex id
   */
  appId: string | null;
  data: {
    /**
     * 24-character lowercase hex id
     */
    runId: string;
    /**
     * 24-character lowercase hex id
     */
    feedbackId: string;
    phase: "prepare" | "clone" | "agent" | "verify" | "guardrails" | "push" | "pr";
    /**
     * How long the phase took, in milliseconds
     */
    durationMs: number;
  };
}
/**
 * The agent_run.succeeded event
 */
export interface EventAgentRunSucceeded {
  /**
   * Stable event id; the webhook-id header of its deliveries
   */
  id: string;
  /**
   * Rises by one per Org with every event: the cursor
   */
  seq: number;
  type: "agent_run.succeeded";
  createdAt: string;
  /**
   * 24-character lowercase hex id
   */
  appId: string | null;
  data: {
    /**
     * 24-character lowercase hex id
     */
    runId: string;
    /**
     * 24-character lowercase hex id
     */
    feedbackId: string;
    /**
     * Null in branch mode (`--host none` or `--pr-mode branch`): the branch was pushed, no pull request opened; the report is `pr_opened` with `mergeRequestUrl` null
     */
    prUrl: string | null;
    branch: string;
    costUsd: number;
  };
}
/**
 * The agent_run.failed event
 */
export interface EventAgentRunFailed {
  /**
   * Stable event id; the webhook-id header of its deliveries
   */
  id: string;
  /**
   * Rises by one per Org with every event: the cursor
   */
  seq: number;
  type: "agent_run.failed";
  createdAt: string;
  /**
   * 24-character lowercase hex id
   */
  appId: string | null;
  data: {
    /**
     * 24-character lowercase hex id
     */
    runId: string;
    /**
     * 24-character lowercase hex id
     */
    feedbackId: string;
    /**
     * A short cause, never report text
     */
    error: string;
  };
}
/**
 * The agent_run.guardrailed event
 */
export interface EventAgentRunGuardrailed {
  /**
   * Stable event id; the webhook-id header of its deliveries
   */
  id: string;
  /**
   * Rises by one per Org with every event: the cursor
   */
  seq: number;
  type: "agent_run.guardrailed";
  createdAt: string;
  /**
   * 24-character lowercase hex id
   */
  appId: string | null;
  data: {
    /**
     * 24-character lowercase hex id
     */
    runId: string;
    /**
     * 24-character lowercase hex id
     */
    feedbackId: string;
    guardrailReason: string;
  };
}
/**
 * The webhook.disabled event
 */
export interface EventWebhookDisabled {
  /**
   * Stable event id; the webhook-id header of its deliveries
   */
  id: string;
  /**
   * Rises by one per Org with every event: the cursor
   */
  seq: number;
  type: "webhook.disabled";
  createdAt: string;
  /**
   * 24-character lowercase hex id
   */
  appId: string | null;
  data: {
    /**
     * 24-character lowercase hex id
     */
    webhookId: string;
    reason: string;
  };
}
/**
 * The webhook.test event
 */
export interface EventWebhookTest {
  /**
   * Stable event id; the webhook-id header of its deliveries
   */
  id: string;
  /**
   * Rises by one per Org with every event: the cursor
   */
  seq: number;
  type: "webhook.test";
  createdAt: string;
  /**
   * 24-character lowercase hex id
   */
  appId: string | null;
  data: {
    /**
     * 24-character lowercase hex id
     */
    webhookId: string;
  };
}

export interface EventListQuery {
  /**
   * A seq (integer 0-999999999): only events after it
   */
  after?: string;
  /**
   * Integer 1-500, default 100
   */
  limit?: string;
  /**
   * Comma-separated event types (feedback.received, feedback.status_changed, feedback.duplicate_attached, feedback.duplicate_suggested, feedback.unmerged, feedback.resolved, agent_run.started, agent_run.phase, agent_run.succeeded, agent_run.failed, agent_run.guardrailed, webhook.disabled, webhook.test)
   */
  types?: string;
  /**
   * 24-character lowercase hex id
   */
  appId?: string;
}

export interface WebhookCreated {
  /**
   * 24-character lowercase hex id
   */
  id: string;
  url: string;
  /**
   * 24-character lowercase hex id
   */
  appId: string | null;
  events: string[];
  enabled: boolean;
  disabledReason: string | null;
  failingSince: string | null;
  /**
   * While set, deliveries carry a second signature made with the previous secret
   */
  previousSecretValidUntil: string | null;
  createdAt: string;
  /**
   * whsec_…: shown once, keep it safe
   */
  secret: string;
}

export interface WebhookCreateParams {
  /**
   * http(s) URL of your receiver
   */
  url: string;
  /**
   * Event types to send; empty or absent: all. Known: feedback.received, feedback.status_changed, feedback.duplicate_attached, feedback.duplicate_suggested, feedback.unmerged, feedback.resolved, agent_run.started, agent_run.phase, agent_run.succeeded, agent_run.failed, agent_run.guardrailed, webhook.disabled, webhook.test
   *
   * @maxItems 50
   */
  events?: string[];
  /**
   * 24-character lowercase hex id
   */
  appId?: string;
}

export interface WebhookList {
  data: {
    /**
     * 24-character lowercase hex id
     */
    id: string;
    url: string;
    /**
     * 24-character lowercase hex id
     */
    appId: string | null;
    events: string[];
    enabled: boolean;
    disabledReason: string | null;
    failingSince: string | null;
    /**
     * While set, deliveries carry a second signature made with the previous secret
     */
    previousSecretValidUntil: string | null;
    createdAt: string;
  }[];
}

export interface Webhook {
  /**
   * 24-character lowercase hex id
   */
  id: string;
  url: string;
  /**
   * 24-character lowercase hex id
   */
  appId: string | null;
  events: string[];
  enabled: boolean;
  disabledReason: string | null;
  failingSince: string | null;
  /**
   * While set, deliveries carry a second signature made with the previous secret
   */
  previousSecretValidUntil: string | null;
  createdAt: string;
}

export interface WebhookSecretRotated {
  /**
   * 24-character lowercase hex id
   */
  id: string;
  secret: string;
  previousSecretValidUntil: string;
}

export interface WebhookTestSent {
  /**
   * 24-character lowercase hex id
   */
  webhookId: string;
  /**
   * Seq of the webhook.test event
   */
  seq: number;
}

export interface DeliveryPage {
  data: {
    /**
     * 24-character lowercase hex id
     */
    id: string;
    /**
     * 24-character lowercase hex id
     */
    webhookId: string;
    /**
     * Sent as webhook-id
     */
    eventId: string;
    eventSeq: number;
    eventType: string;
    status: "pending" | "succeeded" | "failed";
    attempts: number;
    nextAttemptAt: string | null;
    lastStatus: (number) | null;
    createdAt: string;
    updatedAt: string;
    log: {
      attempt: number;
      at: string;
      requestHeaders: {
        /**
         * This interface was referenced by `undefined`'s JSON-Schema definition
         * via the `patternProperty` "^(.*)$".
         */
        [k: string]: string | undefined;
      };
      requestBody: string;
      responseStatus: (number) | null;
      /**
       * First 4 KB of the answer
       */
      responseBody: string | null;
      /**
       * timeout, connection failure or target refused by the SSRF guard
       */
      error: string | null;
      latencyMs: number;
    }[];
  }[];
  /**
   * 24-character lowercase hex id
   */
  nextCursor: string | null;
}

export interface DeliveryListParams {
  /**
   * Default 50
   */
  limit?: number;
  /**
   * The id of the last delivery of the previous page
   */
  cursor?: string;
}

export interface RedeliverFailedResult {
  /**
   * 24-character lowercase hex id
   */
  webhookId: string;
  redelivered: number;
}

export interface RedeliverFailedParams {
  /**
   * ISO 8601: deliveries created at or after
   */
  since: string;
  /**
   * ISO 8601: deliveries created before
   */
  until: string;
}

export interface RedeliverResult {
  /**
   * 24-character lowercase hex id
   */
  id: string;
  status: "pending";
}
