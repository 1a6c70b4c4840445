/**
 * `fixloop feedback …`: triage of near-duplicate suggestions and "Mark as fixed" from the command line, over the same
 * services as the API (the triage rules of modules/feedback/triage-service.ts, the cluster service of
 * the database's dialect). A report or App id is resolved to its Org first.
 */
import { loadConfig } from '../config'
import { domainServices } from '../runtime/domain'
import { closeContext, openContext, type Runtime } from '../runtime/open'
import { type ListRow } from '../modules/feedback/repo'
import { createTriageService } from '../modules/feedback/triage-service'
import { resolveByHand } from '../modules/feedback/service'
import { suggestedLeadsOf } from '../modules/feedback/suggested'
import { toListItem } from '../modules/feedback/present'
import { previewBudget } from '../modules/feedback/present'
import { ApiError } from '../core/errors'
import { LIMITS } from '../core/limits'
import { COMMON_FLAGS, output, parseFlags, UsageError } from './args'
import { didYouMean } from './suggest'
import { clip } from '../core/clip'

export const FEEDBACK_HELP = `Usage:
  fixloop feedback suggestions --app APP_ID [--json]    the App's reports carrying a suggested lead, newest
        first, and the App's merge bars; --json: {"data": [{"id","text","suggestedDuplicateOf"}], "bars", "arrival", "learned"}
  fixloop feedback merge FEEDBACK_ID --lead LEAD_ID [--json]   merge into a lead (confirms the suggestion
        when LEAD_ID is the suggested lead); prints the report
  fixloop feedback reject-suggestion FEEDBACK_ID [--json]      reject the suggested lead; prints the report
  fixloop feedback resolve FEEDBACK_ID [--json]      mark a lead as fixed by hand (resolved, as if its pull
        request were merged: its duplicates follow, reporters who asked are mailed; audited); prints the report
The rules are the API's (docs/triage.md); a running server sees the change (its bars within a second).
Flags: --data-dir DIR (or FIXLOOP_DATA_DIR, default ./data); FIXLOOP_DATABASE_URL for PostgreSQL`

const FLAGS = { app: { type: 'string' }, lead: { type: 'string' } } as const

const COMMANDS: Record<string, { flags: string[]; takesId: boolean }> = {
  suggestions: { flags: ['app'], takesId: false },
  merge: { flags: ['lead'], takesId: true },
  'reject-suggestion': { flags: [], takesId: true },
  resolve: { flags: [], takesId: true },
}

/** Reports scanned for suggestions, newest first (pages of the list). */
const SCAN_MAX = 10_000

function need(value: string | undefined, what: string): string {
  if (value === undefined || value === '') throw new UsageError(`missing ${what}`)
  return value
}

/**
 * The triage service over this process's own cluster service and the store (`feedback …`, `app
 * triage-reset`): every change goes through the same transactions as the server's.
 */
export async function cliTriageService(ctx: Runtime) {
  const lifecycle = ctx.store.lifecycle
  const repo = ctx.store.feedback
  const port = (await ctx.processing()).port
  return { lifecycle, repo, triage: createTriageService(repo, port, ctx.store.apps) }
}

export async function runFeedbackCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseFlags(argv, FLAGS)
  if (values.help) return void process.stdout.write(FEEDBACK_HELP + '\n')
  const sub = positionals[0]
  if (!sub) throw new UsageError(`missing command\n\n${FEEDBACK_HELP}`)
  const spec = COMMANDS[sub]
  if (!spec) throw new UsageError(`unknown command "fixloop feedback ${sub}".${didYouMean(sub, Object.keys(COMMANDS), 'feedback ')}\n\n${FEEDBACK_HELP}`)
  for (const flag of Object.keys(values)) {
    if (!(flag in COMMON_FLAGS) && !spec.flags.includes(flag)) throw new UsageError(`"fixloop feedback ${sub}" does not take --${flag}`)
  }
  const extra = positionals.slice(spec.takesId ? 2 : 1)
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}" for "fixloop feedback ${sub}"`)
  const id = spec.takesId ? need(positionals[1], 'FEEDBACK_ID argument') : ''
  const appId = sub === 'suggestions' ? need(values.app, '--app') : ''
  const leadId = sub === 'merge' ? need(values.lead, '--lead') : ''

  // Every command reads an existing store: a typo never creates a data dir.
  const ctx = await openContext(loadConfig({ dataDir: values['data-dir'] }), undefined, { existingOnly: true })
  try {
    const { repo, triage } = await cliTriageService(ctx)
    const json = values.json
    const orgOfReport = async (feedbackId: string) => {
      const orgId = await repo.orgOf(feedbackId)
      if (!orgId) throw new ApiError('not_found', undefined, `unknown report: ${feedbackId}`)
      return orgId
    }
    /** The report as the API lists it (its suggestion as served now). */
    const shown = async (orgId: string, feedbackId: string) => {
      const row = (await repo.get(orgId, feedbackId))!
      return toListItem(row, previewBudget(), (await suggestedLeadsOf(repo, orgId, [row])).get(row.id) ?? null)
    }
    switch (sub) {
      case 'suggestions': {
        const orgId = await domainServices(ctx).tenants.orgOfApp(appId)
        const found: ListRow[] = []
        const leads = new Map<string, string | null>()
        let cursor: string | undefined
        for (let scanned = 0; scanned < SCAN_MAX; ) {
          const rows = await repo.list({ orgId, appId, cursor, includeDuplicates: false, limit: LIMITS.listLimitMax })
          const page = rows.slice(0, LIMITS.listLimitMax)
          scanned += page.length
          const withSuggestion = page.filter((r) => r.suggestedLeadId)
          for (const [k, v] of await suggestedLeadsOf(repo, orgId, withSuggestion)) leads.set(k, v)
          found.push(...withSuggestion.filter((r) => leads.get(r.id)))
          if (rows.length <= LIMITS.listLimitMax) break
          cursor = page[page.length - 1].id
        }
        const budget = previewBudget()
        const items = found.map((r) => toListItem(r, budget, leads.get(r.id) ?? null))
        const state = await triage.triageState(orgId, appId)
        if (json) return output({ data: items.map((i) => ({ id: i.id, text: i.text, suggestedDuplicateOf: i.suggestedDuplicateOf })), ...state }, true)
        return output(
          {
            data: items.map((i) => ({ id: i.id, lead: i.suggestedDuplicateOf!.id, score: i.suggestedDuplicateOf!.score, reason: i.suggestedDuplicateOf!.reason, text: clip(i.text.replace(/\s+/g, ' '), 60) })),
            bars: state.bars,
            arrival: state.arrival,
            learned: state.learned,
          },
          false,
        )
      }
      case 'merge': {
        const orgId = await orgOfReport(id)
        await triage.merge(orgId, id, leadId)
        return output(await shown(orgId, id), json)
      }
      case 'resolve': {
        const orgId = await orgOfReport(id)
        await resolveByHand(repo, orgId, id, { actor: 'cli' })
        return output(await shown(orgId, id), json)
      }
      case 'reject-suggestion': {
        const orgId = await orgOfReport(id)
        await triage.rejectSuggestion(orgId, id)
        return output(await shown(orgId, id), json)
      }
    }
  } finally {
    await closeContext(ctx)
  }
}
