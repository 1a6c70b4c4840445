/**
 * The SaaS trackers' adapters, by kind, for the registry (src/trackers/ registry: adapterFor(kind)) to
 * spread into its table: Jira Cloud (./jira.ts) and Linear (./linear.ts).
 */
import type { TrackerAdapter } from './adapter'
import { jiraAdapter } from './jira'
import { linearAdapter } from './linear'

export const saasAdapters = { jira: jiraAdapter, linear: linearAdapter } satisfies Record<'jira' | 'linear', TrackerAdapter>
