/**
 * The adapter of each tracker kind. GitHub, GitLab and Gitea/Forgejo here; Jira Cloud and Linear join
 * this table from their own files (src/trackers/jira.ts, src/trackers/linear.ts) — one line each below.
 */
import type { TrackerAdapter, TrackerKind } from './adapter'
import { gitea } from './gitea'
import { github } from './github'
import { gitlab } from './gitlab'
import { saasAdapters } from './saas'

const ADAPTERS: Partial<Record<TrackerKind, TrackerAdapter>> = {
  github,
  gitlab,
  gitea,
  // Jira Cloud (src/trackers/jira.ts) and Linear (src/trackers/linear.ts)
  ...saasAdapters,
}

/** The adapter for `kind`, or null while that kind has none on this build. */
export function adapterFor(kind: TrackerKind): TrackerAdapter | null {
  return ADAPTERS[kind] ?? null
}

/** Where each kind's API lives when the connection names none (null: the connection must say). */
export const DEFAULT_API_URLS: Record<TrackerKind, string | null> = {
  github: 'https://api.github.com',
  linear: 'https://api.linear.app',
  gitlab: null,
  gitea: null,
  jira: null,
}
