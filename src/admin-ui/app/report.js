// One report: text, screenshot and attachments, console, viewport and browser, component, redactions,
// status history, similar reports with merge, duplicates, agent runs. Moves go through /v1.
import { useEffect, useState } from 'preact/hooks'
import { api } from '@fixloop/api'
import { html, Link, useAction, useLoad, ErrorBox, fmtDate, webHref } from '@fixloop/ui'
import { canResolveByHand, customerTargets } from '@fixloop/fsm'
import { ItemStatus, historyText, isBranchPushed, words, MODE_LABELS, MOVE_LABELS } from '@fixloop/labels'
import { TrackerIssue } from '@fixloop/trackers'
import { Replay } from '@fixloop/replay'

const RUN_LABELS = { running: 'Running', succeeded: 'Succeeded', failed: 'Failed', guardrailed: 'Stopped by a guardrail' }

/** A value of the component's free-form meta as text: strings as they are, anything else as compact JSON. */
const metaText = (v) => (typeof v === 'string' ? v : v === null || v === undefined ? '—' : typeof v === 'object' ? JSON.stringify(v) : String(v))

/** The component the reporter pointed at: its name, each meta field on its own line, its box. */
function Component({ ct }) {
  const meta = Object.entries(ct.meta || {})
  return html`<dl class="component">
    <dt>Name</dt><dd class="mono">${ct.name}</dd>
    ${meta.map(([k, v]) => html`<dt>${words(k.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase())}</dt><dd class=${typeof v === 'string' ? 'mono' : 'mono small'}>${metaText(v)}</dd>`)}
    ${ct.bbox && html`<dt>Position</dt><dd>${Math.round(ct.bbox.x)}, ${Math.round(ct.bbox.y)} · ${Math.round(ct.bbox.w)}×${Math.round(ct.bbox.h)} px</dd>`}
  </dl>`
}

const PHASES = [
  ['prepareMs', 'prepare'],
  ['cloneMs', 'clone'],
  ['agentMs', 'agent'],
  ['pushMs', 'push'],
  ['prMs', 'pull request'],
]

/**
 * The pull request's state, as fixloop last learned it (webhooks or polling, docs/agents.md): read from
 * the report's status, since every change of the request moves the report. Its tracker issue moves the
 * report too (docs/trackers.md "Pull": closed → resolved, reopened → back to a person, whatever the
 * request's state), and nothing stored says which of the two made the last move: a report with a tracker
 * issue says what is certain instead of naming a merge or a close that may not have happened.
 */
export function prState(item) {
  if (isBranchPushed(item)) return { text: 'No pull request opened (branch mode)' }
  if (!item.mergeRequestUrl) return null
  const tracked = item.trackerIssue && item.trackerIssue.key
  if (item.status === 'resolved') return tracked ? { text: `Resolved by its pull request or its tracker issue ${tracked}` } : { state: 'merged' }
  if (item.status === 'awaiting_manual') return tracked ? { text: `Back with a person: its pull request was closed or its tracker issue ${tracked} reopened` } : { state: 'closed without merge' }
  if (item.status === 'agent_running') return { state: 'open, iterating on a review' }
  if (item.status === 'pr_opened') return { state: 'open' }
  return null
}

/** The pull request line of the report's actions: its state, or what is known when that is not. */
function PrState({ item }) {
  const s = prState(item)
  if (!s) return null
  return s.state ? html`<span class="pr-state">Pull request: <strong>${s.state}</strong></span>` : html`<span class="pr-state">${s.text}</span>`
}

function Runs({ org, id }) {
  const runs = useLoad(() => api('GET', `/v1/feedback/${id}/agent-runs`, { org: org.id }), [id])
  if (!runs.data || (!runs.data.data.length && !(runs.data.pendingReviews || []).length)) return null
  const waiting = runs.data.pendingReviews || []
  return html`<section aria-labelledby="runs"><h2 id="runs">Agent runs</h2>
    ${waiting.length > 0 && html`<div class="pending-reviews" role="status"><h3>${waiting.length === 1 ? 'A review waits' : `${waiting.length} reviews wait`} for an iteration</h3>
      <p class="muted small">The iteration starts as soon as the App's agent slot is free${waiting.length > 1 ? ' (the reviews run as one iteration)' : ''}.</p>
      <ul>${waiting.map((w) => html`<li>${w.author ? html`<span class="mono">${w.author}</span>` : 'A reviewer'} · ${fmtDate(w.receivedAt)}</li>`)}</ul></div>`}
    ${runs.data.data.map((r) => {
      const t = r.timings
      const total = t.prepareMs + t.cloneMs + t.agentMs + t.pushMs + t.prMs || 1
      return html`<article class="run">
        <h3>${r.trigger === 'review' ? 'Review iteration · ' : ''}${RUN_LABELS[r.status] || words(r.status)} · ${r.provider}${r.model ? ` (${r.model})` : ''} <span class="muted small">${fmtDate(r.startedAt || r.createdAt)}</span></h3>
        <div class="timeline" role="img" aria-label=${`Timeline: prepare ${t.prepareMs} ms, clone ${t.cloneMs} ms, agent ${t.agentMs} ms, push ${t.pushMs} ms, PR ${t.prMs} ms`}>
          ${PHASES.map(([k]) => html`<span class=${`seg ${k}`} style=${`width:${(100 * t[k]) / total}%`}></span>`)}
        </div>
        <ul class="legend">${PHASES.map(([k, label]) => html`<li><span class=${`dot seg ${k}`}></span>${label} ${t[k]} ms</li>`)}</ul>
        <dl class="facts">
          <dt>Tokens</dt><dd>${r.tokensIn} in / ${r.tokensOut} out</dd>
          <dt>Cost</dt><dd>$${r.costUsd.toFixed(4)}</dd>
          <dt>Branch</dt><dd class="mono">${r.branch || '—'}</dd>
          <dt>Pull request</dt><dd>${webHref(r.prUrl) ? html`<a href=${webHref(r.prUrl)} rel="noreferrer noopener" target="_blank">${r.prUrl}</a>` : r.prUrl ? r.prUrl : r.status === 'succeeded' && r.branch ? 'none opened (branch mode): the branch was pushed' : '—'}</dd>
          ${r.guardrailReason && html`<dt>Guardrail</dt><dd>${r.guardrailReason}</dd>`}
          ${r.error && html`<dt>Error</dt><dd>${r.error}</dd>`}
          ${r.summary && html`<dt>Summary</dt><dd>${r.summary}</dd>`}
        </dl>
        ${r.outputTail && html`<details><summary>Output (last 16 KB)</summary><pre tabindex="0">${r.outputTail}</pre></details>`}
      </article>`
    })}
  </section>`
}

const MAIL_LABELS = { pending: 'Queued', sent: 'Sent', failed: 'Failed', unsubscribed: 'Unsubscribed', no_smtp: 'Not sent: the App has no SMTP settings', same_address: 'Not sent again: the same address is told by the mail of another report of this lead', unconfirmed: 'Not sent: the reporter did not confirm the address (public mode asks first)' }

/**
 * Who was told the report is resolved: the reporter's "fixed" mail (masked address, state, time), as the
 * history read carries it (`notification`); nothing when they did not ask, and nothing is fetched for it.
 */
function Notified({ notification: m }) {
  if (!m) return null
  return html`<section aria-labelledby="notified-h"><h2 id="notified-h">Who was notified</h2>
    <dl class="facts">
      <dt>Reporter</dt><dd class="mono">${m.address}</dd>
      <dt>Mail</dt><dd>${MAIL_LABELS[m.state] || words(m.state)}${m.attempts > 1 ? ` after ${m.attempts} attempts` : ''}</dd>
      <dt>${m.settledAt ? 'When' : 'Queued'}</dt><dd><time datetime=${m.settledAt || m.queuedAt}>${fmtDate(m.settledAt || m.queuedAt)}</time></dd>
      ${m.nextAttemptAt && html`<dt>Next attempt</dt><dd><time datetime=${m.nextAttemptAt}>${fmtDate(m.nextAttemptAt)}</time></dd>`}
      ${m.lastError && html`<dt>Last error</dt><dd class="break">${m.lastError}</dd>`}
    </dl>
  </section>`
}

/** A request the widget summarised (failed or slow: docs/widget.md): method, URL, status, duration. */
const isRequest = (r) => r && typeof r === 'object' && !Array.isArray(r)
const cell = (v) => (v === null || v === undefined || v === '' ? '—' : typeof v === 'object' ? JSON.stringify(v) : String(v))

/**
 * The network requests the widget captured (`submissionMeta.network`) as a table, and the host page's own
 * `metadata` as key/value pairs. End-user input like every other field: rendered as text (Preact escapes).
 */
function SubmissionMeta({ meta }) {
  if (!meta || typeof meta !== 'object' || Array.isArray(meta)) return null
  const requests = Array.isArray(meta.network) ? meta.network.filter(isRequest) : []
  const rest = Object.entries(meta).filter(([k]) => k !== 'network' || !Array.isArray(meta.network))
  return html`${requests.length > 0 &&
    html`<section aria-labelledby="network-h"><h2 id="network-h">Network requests</h2>
      <div class="table-wrap" tabindex="0" role="region" aria-label="Requests, oldest first"><table class="network stack">
        <caption class="sr-only">Requests the page made before the report (failed or slow), oldest first</caption>
        <thead><tr><th scope="col">Method</th><th scope="col">URL</th><th scope="col">Status</th><th scope="col">Duration</th></tr></thead>
        <tbody>${requests.map(
          (r) => html`<tr><td class="mono" data-label="Method">${cell(r.method)}</td><td class="mono url" data-label="URL">${cell(r.url)}</td><td class=${Number(r.status) >= 400 || r.status === 0 ? 'bad' : ''} data-label="Status">${r.status === 0 ? 'no answer' : cell(r.status)}</td><td data-label="Duration">${typeof r.ms === 'number' ? `${Math.round(r.ms)} ms` : cell(r.ms)}</td></tr>`,
        )}</tbody>
      </table></div>
    </section>`}
  ${rest.length > 0 &&
    html`<section aria-labelledby="meta-h"><h2 id="meta-h">Metadata</h2>
      <dl class="facts meta">${rest.map(([k, v]) => html`<dt class="mono">${k}</dt><dd class=${typeof v === 'string' ? 'break' : 'mono small break'}>${cell(v)}</dd>`)}</dl>
    </section>`}`
}

function Similar({ org, item, onMerged }) {
  const sim = useLoad(() => api('GET', `/v1/feedback/${item.id}/similar?limit=10`, { org: org.id }), [item.id, item.duplicateOfId])
  const [merge, busy, error] = useAction(async (leadId) => {
    onMerged(await api('POST', `/v1/feedback/${item.id}/merge`, { org: org.id, body: { leadId } }))
  })
  return html`<aside aria-labelledby="similar" class="side"><h2 id="similar">Similar reports</h2>
    <${ErrorBox} error=${sim.error || error} />
    ${sim.data && !sim.data.data.length && html`<p class="muted">None found.</p>`}
    <ul class="similar">
      ${sim.data &&
      sim.data.data.map(
        (s) => html`<li>
          <span class="score" title="similarity">${Math.round(s.score * 100)}%</span>
          <${Link} href=${`/admin/o/${org.id}/r/${s.id}`}>${s.text.slice(0, 120)}</${Link}>
          ${s.duplicateOfId ? html`<span class="muted small">duplicate</span>` : !item.duplicateOfId && html`<button type="button" class="small" disabled=${busy} onClick=${() => merge(s.id)}>Merge into this <span class="sr-only">report</span></button>`}
        </li>`,
      )}
    </ul>
  </aside>`
}

const pct = (score) => `${Math.round(score * 100)}%`

/** A report without a theme (a duplicate: the lead holds its cluster's theme) is headed by its first line. */
const headline = (text) => (text || '').trim().split('\n')[0].slice(0, 160) || 'Report'

/**
 * A lead clustering offered instead of merging (docs/triage.md "Suggestions: the second tier"): which
 * one, how close, why; Confirm merges into it, Reject never offers it again. Both teach the App's bars.
 */
function Suggestion({ org, item, onDone }) {
  const s = item.suggestedDuplicateOf
  const lead = useLoad(() => (s ? api('GET', `/v1/feedback/${s.id}`, { org: org.id }) : Promise.resolve(null)), [s && s.id])
  const [act, busy, error] = useAction(async (what) => {
    if (what === 'confirm') await api('POST', `/v1/feedback/${item.id}/merge`, { org: org.id, body: { leadId: s.id } })
    else await api('POST', `/v1/feedback/${item.id}/reject-suggestion`, { org: org.id })
    onDone()
  })
  if (!s) return null
  const name = lead.data ? lead.data.theme || lead.data.text.slice(0, 120) : s.id
  return html`<section aria-labelledby="suggestion-h" class="notice suggestion">
    <h2 id="suggestion-h">Possible duplicate</h2>
    <p>This report may be a duplicate of <${Link} href=${`/admin/o/${org.id}/r/${s.id}`}>${name}</${Link}>: similarity <strong>${pct(s.score)}</strong>, not enough to merge on its own.</p>
    <p class="muted small">Why: ${s.reason}</p>
    <div class="actions">
      <button type="button" class="primary" disabled=${busy} onClick=${() => act('confirm')}>Confirm duplicate</button>
      <button type="button" disabled=${busy} onClick=${() => act('reject')}>Not a duplicate</button>
    </div>
    <${ErrorBox} error=${error} />
  </section>`
}

/**
 * May a person mark this report as spam? What the server allows (src/modules/feedback/repo.ts SPAM_MARKABLE):
 * a lead without duplicates that nobody has decided on yet (not queued, not run, not archived).
 */
const SPAM_MARKABLE = ['received', 'sanitizing', 'sanitized', 'awaiting_manual']
const spamMarkable = (item) => !item.duplicateOfId && !item.spam && !item.duplicateCount && SPAM_MARKABLE.includes(item.status)

/** A spam classification's reasons as words ("honeypot filled, no proof of work"). */
export const spamReasons = (spam) => (spam && spam.reasons && spam.reasons.length ? spam.reasons.map((r) => String(r).replace(/_/g, ' ')).join(', ') : 'no reason recorded')

/**
 * The spam classification (docs/widget.md "Abuse defence"): why, and "Not spam", which puts the report
 * back into the normal lifecycle and teaches the App's score ("Mark as spam" is with the status moves).
 */
function Spam({ org, item, onDone }) {
  const [mark, busy, error] = useAction(async (spam) => {
    await api('PATCH', `/v1/feedback/${item.id}`, { org: org.id, body: { spam } })
    onDone()
  })
  if (!item.spam) return null
  return html`<section aria-labelledby="spam-h" class="notice spam">
    <h2 id="spam-h">Classified as spam</h2>
    <p>Score <strong>${Number(item.spam.score).toFixed(2)}</strong>: ${spamReasons(item.spam)}.${item.spam.markedAt ? html` <span class="muted small">Since <time datetime=${item.spam.markedAt}>${fmtDate(item.spam.markedAt)}</time>.</span>` : ''}</p>
    <p class="muted small">Spam stays out of the inbox, clusters, agent runs, webhooks and Slack.</p>
    <div class="actions"><button type="button" class="primary" disabled=${busy} onClick=${() => mark(false)}>Not spam</button></div>
    <${ErrorBox} error=${error} />
  </section>`
}

/**
 * What an Unmerge will change, said next to the button: undoing an automatic merge raises the App's merge
 * bars (docs/triage.md); the server computes the bars after it (`?unmergeScore`), with the rule it applies.
 */
function UnmergeEffect({ org, item }) {
  const m = item.duplicateMatch
  const automatic = !!(m && m.automatic && m.score !== null)
  const state = useLoad(() => (automatic ? api('GET', `/v1/apps/${item.appId}/triage?unmergeScore=${m.score}`, { org: org.id }) : Promise.resolve(null)), [item.id, automatic])
  if (!automatic) return html`<span class="muted small unmerge-effect">Unmerging a merge made by hand changes no merge bar.</span>`
  const d = state.data
  if (!d || !d.afterUnmerge) return null
  const from = d.bars.merge.toFixed(2)
  const to = d.afterUnmerge.merge.toFixed(2)
  return html`<span class="muted small unmerge-effect">${to === from
    ? `Unmerging leaves this App's automatic merge bar at ${from}.`
    : `Unmerging raises this App's automatic merge bar from ${from} to ${to}.`}</span>`
}

/** How a duplicate became one: merged automatically (score, reason) or by hand. */
function matchText(m) {
  if (!m) return ''
  if (m.automatic) return `Merged automatically: similarity ${m.score === null ? '—' : pct(m.score)}${m.reason ? ` (${m.reason})` : ''}.`
  return m.score === null ? 'Merged by hand.' : `Merged by hand, confirming a suggestion (similarity ${pct(m.score)}).`
}

export function ReportPage({ org, id }) {
  const [item, setItem] = useState(null)
  const [error, setError] = useState(null)
  const [n, setN] = useState(0)
  const history = useLoad(() => api('GET', `/admin/api/orgs/${org.id}/feedback/${id}/history`), [id, n])
  useEffect(() => {
    setError(null)
    api('GET', `/v1/feedback/${id}`, { org: org.id }).then(setItem, setError)
    api('POST', `/admin/api/orgs/${org.id}/reads`, { body: { ids: [id] } }).catch(() => {})
  }, [id, n])
  const reload = () => setN((x) => x + 1)
  const [act, busy, actError] = useAction(async (what) => {
    if (what === 'unmerge') await api('POST', `/v1/feedback/${id}/unmerge`, { org: org.id })
    else if (what === 'lead') {
      // Lossless swap: this report leaves the cluster, then the old lead (and its other duplicates,
      // which a merge always moves along) joins it. Each step alone loses nothing.
      const oldLead = item.duplicateOfId
      await api('POST', `/v1/feedback/${id}/unmerge`, { org: org.id })
      await api('POST', `/v1/feedback/${oldLead}/merge`, { org: org.id, body: { leadId: id } })
    } else if (what === 'resolve') await api('POST', `/v1/feedback/${id}/resolve`, { org: org.id })
    else if (what === 'spam') await api('PATCH', `/v1/feedback/${id}`, { org: org.id, body: { spam: true } })
    else await api('PATCH', `/v1/feedback/${id}`, { org: org.id, body: { status: what } })
    reload()
  })
  if (error) return html`<h1>${error.status === 404 ? '404 ' : ''}Report not found</h1><${ErrorBox} error=${error} />`
  if (!item || item.id !== id) return html`<p>Loading…</p>`
  const shots = item.attachments.filter((a) => a.kind !== 'replay' && a.contentType.startsWith('image/'))
  // A session replay is played, not listed (the first one: a report has at most one).
  const replay = item.attachments.find((a) => a.kind === 'replay')
  const files = item.attachments.filter((a) => !a.contentType.startsWith('image/') && a.kind !== 'replay')
  const ct = item.componentTarget
  // Only the moves the FSM allows from here (the same module the API checks PATCH against).
  const moves = customerTargets(item.status)
  const redactions = Object.entries(item.redactions || {})
  return html`<p class="crumbs"><${Link} href=${`/admin/o/${org.id}/inbox`}>Inbox</${Link}> / report <span class="mono">${id}</span></p>
  <div class="report">
    <div class="report-main">
      <h1>${item.theme || headline(item.text)}</h1>
      ${item.duplicateOfId &&
      html`<p class="notice">This report is a duplicate and read-only. ${matchText(item.duplicateMatch)} <${Link} href=${`/admin/o/${org.id}/r/${item.duplicateOfId}`}>Go to lead</${Link}>${' '}
        <button type="button" class="small" disabled=${busy} onClick=${() => act('unmerge')}>Unmerge</button>${' '}
        <button type="button" class="small" disabled=${busy} onClick=${() => act('lead')}>Make lead</button>
        <${UnmergeEffect} org=${org} item=${item} /></p>`}
      <${ErrorBox} error=${actError} />
      <${Spam} org=${org} item=${item} onDone=${reload} />
      <${Suggestion} org=${org} item=${item} onDone=${reload} />
      <div class="actions">
        <span>Status: <${ItemStatus} item=${item} /></span>
        ${!item.duplicateOfId &&
        moves.map((to) => html`<button type="button" disabled=${busy} onClick=${() => act(to)}>${MOVE_LABELS[to] || words(to)}</button>`)}
        ${!item.duplicateOfId && canResolveByHand(item.status) && html`<button type="button" disabled=${busy} onClick=${() => act('resolve')} aria-describedby="resolve-hint">Mark as fixed</button>`}
        ${spamMarkable(item) && html`<button type="button" disabled=${busy} onClick=${() => act('spam')}>Mark as spam</button>`}
        ${webHref(item.mergeRequestUrl) && html`<a href=${webHref(item.mergeRequestUrl)} rel="noreferrer noopener" target="_blank">Pull request</a>`}
        <${PrState} item=${item} />
      </div>
      ${!item.duplicateOfId && canResolveByHand(item.status) &&
      html`<p id="resolve-hint" class="muted small">${isBranchPushed(item) ? 'Once you merged the branch, mark' : 'Fixed outside the agent? Mark'} the report as fixed: it is resolved with its duplicates, and reporters who asked are told by mail.</p>`}
      <${TrackerIssue} key=${`tracker-${item.id}`} org=${org} item=${item} />
      ${item.statusReason &&
      html`<p class="notice reason"><strong>On hold.</strong> ${item.statusReason[0].toUpperCase() + item.statusReason.slice(1)}.${' '}
        <${Link} href=${`/admin/o/${org.id}/apps/${item.appId}`}>Open the App’s settings</${Link}></p>`}
      <section aria-labelledby="text-h"><h2 id="text-h">Text</h2><p class="text">${item.text}</p>
        ${item.consolidatedText && item.duplicateCount > 0 && html`<h3>Consolidated</h3><p class="text">${item.consolidatedText}</p>`}</section>
      <dl class="facts">
        <dt>Submitted</dt><dd>${fmtDate(item.createdAt)} by ${item.submittedBy.email ? `${item.submittedBy.email} (${MODE_LABELS[item.submittedBy.mode] || item.submittedBy.mode})` : MODE_LABELS[item.submittedBy.mode] || item.submittedBy.mode}</dd>
        <dt>Severity</dt><dd>${item.severity || '—'}</dd>
        <dt>URL</dt><dd class="break">${item.url || '—'}</dd>
        <dt>Viewport</dt><dd>${item.viewport ? `${item.viewport.w}×${item.viewport.h} @${item.viewport.dpr}x` : '—'}</dd>
        <dt>Browser</dt><dd class="break">${item.userAgent || '—'}</dd>
        ${ct && html`<dt>Component</dt><dd><${Component} ct=${ct} /></dd>`}
        <dt>Redactions</dt><dd>${redactions.length ? redactions.map(([k, v]) => `${words(k)}: ${v}`).join(', ') : 'none'}</dd>
        ${item.failureReason && html`<dt>Failure</dt><dd>${item.failureReason}</dd>`}
      </dl>
      ${(ct && ct.screenshotUrl) || shots.length
        ? html`<section aria-labelledby="shots"><h2 id="shots">Screenshots</h2>
          ${ct && ct.screenshotUrl && html`<img src=${ct.screenshotUrl} alt=${`Screenshot of component ${ct.name}`} class="shot" />`}
          ${shots.map((a, i) => html`<a href=${a.url}><img src=${a.url} alt=${`Screenshot ${i + 1}`} class="shot" /></a>`)}</section>`
        : null}
      ${replay && html`<${Replay} key=${replay.key} attachment=${replay} consoleLogs=${item.consoleLogs} />`}
      ${files.length > 0 && html`<section aria-labelledby="files"><h2 id="files">Attachments</h2><ul>${files.map((a) => html`<li><a href=${a.url}>${a.kind} · ${a.contentType} · ${a.byteSize} bytes</a></li>`)}</ul></section>`}
      ${item.consoleLogs.length > 0 &&
      html`<section aria-labelledby="console"><h2 id="console">Console</h2><pre class="console" tabindex="0">${item.consoleLogs.map((l) => `[${l.level}] ${l.message}`).join('\n')}</pre></section>`}
      <${SubmissionMeta} meta=${item.submissionMeta} />
      ${item.duplicates.length > 0 &&
      html`<section aria-labelledby="dups"><h2 id="dups">Duplicates (${item.duplicateCount})</h2>
        <ul>${item.duplicates.map((d) => html`<li><${Link} href=${`/admin/o/${org.id}/r/${d.id}`}>${d.text.slice(0, 140)}</${Link}> <span class="muted small">${fmtDate(d.createdAt)}</span></li>`)}</ul></section>`}
      <section aria-labelledby="hist"><h2 id="hist">History</h2>
        ${history.data && !history.data.data.length && html`<p class="muted">No events recorded.</p>`}
        <ol class="history">${history.data && history.data.data.map((e) => html`<li><time datetime=${e.createdAt}>${fmtDate(e.createdAt)}</time> ${historyText(e)}</li>`)}</ol>
      </section>
      <${Runs} org=${org} id=${id} />
      <${Notified} notification=${history.data && history.data.notification} />
    </div>
    ${item.spam
      ? html`<aside aria-labelledby="similar" class="side"><h2 id="similar">Similar reports</h2><p class="muted">Spam is not clustered: say “Not spam” to process this report and compare it with the others.</p></aside>`
      : html`<${Similar} org=${org} item=${item} onMerged=${reload} />`}
  </div>`
}
