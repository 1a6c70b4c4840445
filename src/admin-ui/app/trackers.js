// Issue-tracker sync on the dashboard (docs/trackers.md): the App page's "Issue tracker" section (connect,
// state map and push rules, health, webhook URL and secret, rotate, disconnect) and the report page's
// tracker issue (push by hand, then the issue's key, state and sync state). All through the /v1 routes.
// A server without the routes (404 on GET /v1/apps/:id/tracker) shows a short note instead.
import { useEffect, useState } from 'preact/hooks'
import { api } from '@fixloop/api'
import { html, useAction, useLoad, waitingFor, PendingSection, ErrorBox, Dialog, CopyField, fmtDate, webHref } from '@fixloop/ui'
import { useReauth, ConfirmIdentity, confirmFirst, canConfirm } from '@fixloop/reauth'

export const TRACKER_NAMES = { github: 'GitHub', gitlab: 'GitLab', gitea: 'Gitea', jira: 'Jira', linear: 'Linear' }

/** Per kind: what "project" means, the API URL's example and whether it is needed, and where the token comes from. */
const KINDS = {
  github: { project: 'Repository (owner/repo)', projectHint: 'e.g. acme/shop', api: 'https://api.github.com', apiNeeded: false, token: 'A token with Issues read and write on the repository.' },
  gitlab: { project: 'Project path or id', projectHint: 'e.g. acme/shop or 42', api: 'https://gitlab.example.com/api/v4', apiNeeded: true, token: 'A project or personal access token with the api scope.' },
  gitea: { project: 'Repository (owner/repo)', projectHint: 'e.g. acme/shop', api: 'https://gitea.example.com/api/v1', apiNeeded: true, token: 'An access token with write:issue and read:user.' },
  jira: { project: 'Project key', projectHint: 'e.g. PROJ', api: 'https://acme.atlassian.net', apiNeeded: true, token: 'An Atlassian API token of the account e-mail above.' },
  linear: { project: 'Team id', projectHint: 'the team’s UUID', api: 'https://api.linear.app', apiNeeded: false, token: 'A personal API key (lin_api_…).' },
}
const SEVERITIES = ['low', 'medium', 'high', 'unset']
const ACTIONS = ['resolved', 'reopen', 'ignore']

/** The state map as lines "name = action", and back; null with a reason when a line does not read. */
export const stateMapText = (m) => Object.entries(m || {}).map(([k, v]) => `${k} = ${v}`).join('\n')
export function parseStateMap(text) {
  const out = {}
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim()
    if (!line) continue
    const at = line.lastIndexOf('=')
    const name = at > 0 ? line.slice(0, at).trim().toLowerCase() : ''
    const action = at > 0 ? line.slice(at + 1).trim().toLowerCase() : ''
    if (!name || !ACTIONS.includes(action)) return { error: `Line ${i + 1}: write “state name = ${ACTIONS.join(' | ')}”.` }
    out[name] = action
  }
  return { map: out }
}

/** GET the App's tracker; `undefined` when this server has no tracker routes. */
async function loadTracker(org, appId) {
  try {
    return (await api('GET', `/v1/apps/${appId}/tracker`, { org: org.id })).tracker
  } catch (e) {
    if (e && e.status === 404) return undefined
    throw e
  }
}

function Health({ t }) {
  const h = t.health || {}
  const failing = h.state === 'failing'
  return html`<dl class="facts">
    <dt>Connected to</dt><dd>${TRACKER_NAMES[t.kind] || t.kind} · <span class="mono break">${t.project}</span>${t.actor ? html` as <span class="mono">${t.actor}</span>` : ''}</dd>
    <dt>API</dt><dd class="mono break">${t.apiUrl}</dd>
    <dt>Health</dt><dd><span class=${`badge ${failing ? 'bad' : 'ok'}`}>${failing ? 'Failing' : 'OK'}</span>${h.pending ? ` · ${h.pending} waiting to sync` : ''}</dd>
    ${h.lastError && html`<dt>Last error</dt><dd class="break">${h.lastError}${h.lastErrorAt ? html` <span class="muted small">(<time datetime=${h.lastErrorAt}>${fmtDate(h.lastErrorAt)}</time>)</span>` : ''}</dd>`}
    ${h.retryAt && html`<dt>Next retry</dt><dd><time datetime=${h.retryAt}>${fmtDate(h.retryAt)}</time></dd>`}
    <dt>Since</dt><dd><time datetime=${t.createdAt}>${fmtDate(t.createdAt)}</time></dd>
  </dl>`
}

/** The webhook the tracker must call, and the secret when it was just made (shown once). */
function Webhook({ t, secret, onDone }) {
  const linear = t.kind === 'linear'
  return html`<div class=${secret ? 'notice tracker-hook' : 'tracker-hook'} role=${secret ? 'status' : undefined}>
    <${CopyField} label="Webhook URL" id="tracker-hook-url" value=${t.webhookUrl} />
    ${secret &&
    html`<p><strong>Copy the webhook secret now.</strong> It is shown this once.</p>
      <${CopyField} label="Webhook secret" id="tracker-hook-secret" value=${secret} />
      <p class="hint">${linear
        ? 'Linear’s webhook form makes its own secret: paste that one into “Linear webhook signing secret” above and save again (or create the webhook with the API passing this secret, docs/trackers.md).'
        : 'Set it as the secret of the webhook on the tracker (events: issues; Jira: issue updated and deleted).'}</p>
      <button type="button" onClick=${onDone}>Done</button>`}
  </div>`
}

export function TrackerSection({ org, app }) {
  // The connection (token, webhook secret, rules) is the Org owners' (permission trackers.manage).
  if (org.role !== 'owner') {
    return html`<section aria-labelledby="tracker"><h2 id="tracker">Issue tracker</h2>
      <p class="muted">Org owners connect an issue tracker here. Members push leads from a report’s page.</p></section>`
  }
  return html`<${TrackerForm} org=${org} app=${app} />`
}

function TrackerForm({ org, app }) {
  const current = useLoad(() => loadTracker(org, app.id), [app.id])
  const [f, setF] = useState(null)
  const [secret, setSecret] = useState(null)
  const [saved, setSaved] = useState('')
  const [dialog, setDialog] = useState(null)
  const [mapError, setMapError] = useState(null)
  const t = current.data
  const form = f || {
    kind: t ? t.kind : 'github',
    apiUrl: t ? t.apiUrl : '',
    project: t ? t.project : '',
    account: t && t.account ? t.account : '',
    token: '',
    webhookSecret: '',
    stateMap: stateMapText(t && t.stateMap),
    minDuplicates: t && t.rules && t.rules.minDuplicates !== null ? String(t.rules.minDuplicates) : '',
    onAwaitingManual: t && t.rules ? t.rules.onAwaitingManual : [],
  }
  const set = (k) => (e) => setF({ ...form, [k]: e.target.value })
  const toggleSeverity = (s) => (e) => setF({ ...form, onAwaitingManual: e.target.checked ? [...form.onAwaitingManual, s] : form.onAwaitingManual.filter((x) => x !== s) })
  // Issues would go to another tracker, project or account, also after this session ends (and whoever
  // knows a webhook secret can move reports): the admin confirms it is them. The server asks the same;
  // the state mapping and push rules alone change nothing of that.
  const reauth = useReauth()
  const [password, setPassword] = useState('')
  const retargets =
    !t ||
    form.kind !== t.kind ||
    form.apiUrl.trim() !== t.apiUrl ||
    form.project.trim() !== t.project ||
    (form.kind === 'jira' && form.account.trim() !== (t.account || '')) ||
    !!form.token ||
    (form.kind === 'linear' && !!form.webhookSecret.trim())
  const [save, busy, error] = useAction(async () => {
    setSaved('')
    const parsed = parseStateMap(form.stateMap)
    setMapError(parsed.error || null)
    if (parsed.error) return
    const body = {
      kind: form.kind,
      project: form.project.trim(),
      stateMap: parsed.map,
      rules: { minDuplicates: form.minDuplicates === '' ? null : Number(form.minDuplicates), onAwaitingManual: form.onAwaitingManual },
    }
    if (form.apiUrl.trim()) body.apiUrl = form.apiUrl.trim()
    if (form.token) body.token = form.token
    if (form.kind === 'linear' && form.webhookSecret.trim()) body.webhookSecret = form.webhookSecret.trim()
    if (form.kind === 'jira' && form.account.trim()) body.account = form.account.trim()
    if (retargets) await confirmFirst(reauth.data, 'tracker_connect', password)
    const res = await api('PUT', `/v1/apps/${app.id}/tracker`, { org: org.id, body })
    setPassword('')
    reauth.reload()
    setSecret(res.webhookSecret || null)
    setF(null)
    setSaved(t ? 'Saved.' : 'Connected.')
    current.reload()
  })
  // The new secret lets its holder move reports through the tracker's webhook: asked like connecting.
  const [rotatePassword, setRotatePassword] = useState('')
  const [rotate, rotating, rotateError] = useAction(async () => {
    await confirmFirst(reauth.data, 'tracker_connect', rotatePassword)
    const res = await api('POST', `/v1/apps/${app.id}/tracker/rotate-webhook-secret`, { org: org.id })
    setRotatePassword('')
    reauth.reload()
    setSecret(res.webhookSecret)
    setDialog(null)
  })
  const [disconnect, disconnecting, disconnectError] = useAction(async () => {
    await api('DELETE', `/v1/apps/${app.id}/tracker`, { org: org.id })
    setDialog(null)
    setSecret(null)
    setF(null)
    setSaved('Disconnected.')
    current.reload()
  })
  const heading = html`<h2 id="tracker">Issue tracker</h2>`
  // The form shows whole, once: with the stored connection and the way this admin confirms.
  const waiting = waitingFor(current, reauth)
  if (waiting) return html`<${PendingSection} id="tracker" title="Issue tracker" load=${waiting} />`
  if (t === undefined) return html`<section aria-labelledby="tracker">${heading}<p class="muted">This server does not offer issue-tracker sync.</p></section>`
  const kind = KINDS[form.kind] || KINDS.github
  // The stored token is kept only for the same tracker (kind and API URL): pointed elsewhere, the server
  // asks for it again (docs/trackers.md), so the form does too.
  const sameTracker = t && form.kind === t.kind && (form.apiUrl.trim() || kind.api).replace(/\/+$/, '') === t.apiUrl
  const tokenHint = !t ? 'Stored encrypted, never shown again.' : sameTracker ? 'Empty keeps the stored token.' : 'Required again: the tracker or its API URL changed, and the stored token is only sent where it was given for.'
  const field = (id, label, input, hint) => html`<div class="field"><label for=${id}>${label}</label>${input}${hint && html`<small id=${`${id}-hint`}>${hint}</small>`}</div>`
  return html`<section aria-labelledby="tracker">${heading}
    <p>${t
      ? html`Leads become issues in ${TRACKER_NAMES[t.kind] || t.kind}; closing an issue there resolves the lead and its duplicates.`
      : 'Not connected. Connect GitHub Issues, GitLab, Gitea, Jira or Linear to push leads as issues and get their state back (docs/trackers.md).'}
</p>
    ${t && html`<${Health} t=${t} />`}
    ${t && html`<${Webhook} t=${t} secret=${secret} onDone=${() => setSecret(null)} />`}
    <form class="grid" onSubmit=${(e) => (e.preventDefault(), save())}>
      <fieldset>
      <legend class="sr-only">Issue tracker connection</legend>
      ${field('t-kind', 'Tracker', html`<select id="t-kind" value=${form.kind} onChange=${set('kind')}>${Object.keys(KINDS).map((k) => html`<option value=${k}>${TRACKER_NAMES[k]}</option>`)}</select>`)}
      ${field('t-project', kind.project, html`<input id="t-project" required maxlength="300" value=${form.project} onInput=${set('project')} aria-describedby="t-project-hint" />`, kind.projectHint)}
      ${field('t-api', 'API URL', html`<input id="t-api" type="url" required=${kind.apiNeeded} placeholder=${kind.api} value=${form.apiUrl} onInput=${set('apiUrl')} aria-describedby="t-api-hint" />`, kind.apiNeeded ? `e.g. ${kind.api}` : `Empty: ${kind.api}`)}
      ${form.kind === 'jira' && field('t-account', 'Account e-mail', html`<input id="t-account" type="email" required autocomplete="off" value=${form.account} onInput=${set('account')} aria-describedby="t-account-hint" />`, 'The Atlassian account the API token belongs to.')}
      ${field('t-token', 'Access token', html`<input id="t-token" type="password" autocomplete="off" required=${!sameTracker} value=${form.token} onInput=${set('token')} aria-describedby="t-token-hint" />`, `${kind.token} ${tokenHint}`)}
      ${form.kind === 'linear' && field('t-hook-secret', 'Linear webhook signing secret', html`<input id="t-hook-secret" type="password" autocomplete="off" minlength="16" value=${form.webhookSecret} onInput=${set('webhookSecret')} aria-describedby="t-hook-secret-hint" />`, 'Linear’s webhook form makes its own secret: paste it here after creating the webhook. Empty keeps the current one. Stored encrypted, never shown again.')}
      <div class="field wide"><label for="t-map">State mapping</label>
        <textarea id="t-map" rows="3" class="mono" aria-describedby="t-map-hint" aria-invalid=${mapError ? 'true' : undefined} value=${form.stateMap} onInput=${set('stateMap')} placeholder="deployed = resolved"></textarea>
        <small id="t-map-hint">One per line: “tracker state = resolved | reopen | ignore”. States not listed follow their category (done resolves, open reopens).</small></div>
      ${field('t-min', 'Push a lead at this many duplicates', html`<input id="t-min" type="number" min="1" max="100000" value=${form.minDuplicates} onInput=${set('minDuplicates')} aria-describedby="t-min-hint" />`, 'Empty: never by size.')}
      <fieldset class="wide severities"><legend>Push when a lead awaits manual work, for severity</legend>
        ${SEVERITIES.map((s) => html`<span class="check"><input id=${`t-sev-${s}`} type="checkbox" checked=${form.onAwaitingManual.includes(s)} onChange=${toggleSeverity(s)} /><label for=${`t-sev-${s}`}>${s}</label></span>`)}
      </fieldset>
      ${retargets &&
      html`<p class="hint wide">Issues with the reports’ content go to this tracker, also after you sign out: confirm it is you to save.${reauth.data && !reauth.data.hasPassword ? ' Confirm first, then fill in the form: what is typed here is not kept across the provider’s sign-in page.' : ''}</p>
        <${ConfirmIdentity} status=${reauth.data} purpose="tracker_connect" id="t-password" label="Your fixloop password" passwordOnly=${true} password=${password} setPassword=${setPassword} what="to save the tracker" />`}
      <div class="actions wide"><button type="submit" class="primary" disabled=${busy || (retargets && !canConfirm(reauth.data, 'tracker_connect'))}>${t ? 'Save tracker' : 'Connect tracker'}</button>
        ${t && html`<button type="button" onClick=${() => setDialog('rotate')}>Rotate webhook secret</button>`}
        ${t && html`<button type="button" class="danger" onClick=${() => setDialog('disconnect')}>Disconnect</button>`}
        ${saved && html`<span role="status">${saved}</span>`}</div>
      </fieldset>
    </form>
    ${mapError && html`<p class="error" role="alert">${mapError}</p>`}
    <${ErrorBox} error=${error || disconnectError} />
    ${dialog === 'rotate' &&
    html`<${Dialog} title="Rotate the tracker's webhook secret?" onClose=${() => setDialog(null)}>
      <p>Deliveries signed with the old secret are refused until you set the new one on the tracker's webhook. Polling keeps states in sync meanwhile.</p>
      <form onSubmit=${(e) => (e.preventDefault(), rotate())}>
        <${ConfirmIdentity} status=${reauth.data} purpose="tracker_connect" id="t-rotate-password" label="Your fixloop password" password=${rotatePassword} setPassword=${setRotatePassword} autofocus=${true} what="to rotate the secret" />
        <${ErrorBox} error=${rotateError} />
        <div class="actions"><button type="submit" class="danger" disabled=${rotating || !canConfirm(reauth.data, 'tracker_connect')}>Rotate now</button><button type="button" onClick=${() => setDialog(null)}>Cancel</button></div>
      </form>
    </${Dialog}>`}
    ${dialog === 'disconnect' &&
    html`<${Dialog} title="Disconnect the issue tracker?" onClose=${() => setDialog(null)}>
      <p>No more issues are pushed and no states come back. Issues already on the tracker stay there.</p>
      <${ErrorBox} error=${disconnectError} />
      <div class="actions"><button type="button" class="danger" disabled=${disconnecting} onClick=${disconnect}>Disconnect</button><button type="button" autofocus onClick=${() => setDialog(null)}>Cancel</button></div>
    </${Dialog}>`}
  </section>`
}

const SYNC_LABELS = { pending: 'Syncing…', synced: 'In sync', failing: 'Failing, retrying', deleted: 'Deleted on the tracker' }
/** Polling a pending push: every 2 s, for at most 2 minutes. */
const POLL_MS = 2000
const POLL_MAX = 60

/** The report's tracker issue, or the button that pushes the lead (reports that are no duplicate). */
export function TrackerIssue({ org, item }) {
  const [issue, setIssue] = useState(item.trackerIssue || null)
  // A member may push but not read the connection (403): the button then names no tracker, and a push
  // without one answers 409 tracker_not_connected, shown as the error.
  const tracker = useLoad(
    () => (item.trackerIssue || item.duplicateOfId ? Promise.resolve(null) : loadTracker(org, item.appId).catch((e) => (e && e.status === 403 ? { kind: null } : null))),
    [item.appId, item.id],
  )
  useEffect(() => setIssue(item.trackerIssue || null), [item.id, item.trackerIssue && item.trackerIssue.syncState])
  const pending = issue && issue.syncState === 'pending'
  useEffect(() => {
    if (!pending) return
    let n = 0
    const timer = setInterval(async () => {
      if (++n > POLL_MAX) return clearInterval(timer)
      try {
        const fresh = await api('GET', `/v1/feedback/${item.id}`, { org: org.id })
        if (fresh.trackerIssue) setIssue(fresh.trackerIssue)
      } catch {
        // the next tick tries again
      }
    }, POLL_MS)
    return () => clearInterval(timer)
  }, [pending, item.id])
  const [push, busy, error] = useAction(async () => {
    const res = await api('POST', `/v1/feedback/${item.id}/tracker-issue`, { org: org.id })
    setIssue(res.trackerIssue)
  })
  const name = (k) => TRACKER_NAMES[k] || k || 'the tracker'
  if (issue) {
    return html`<section aria-labelledby="tracker-issue-h" class="tracker-issue"><h2 id="tracker-issue-h">${name(issue.kind)} issue</h2>
      <p>${webHref(issue.url) && issue.key
        ? html`<a href=${webHref(issue.url)} rel="noreferrer noopener" target="_blank" class="mono">${issue.key}</a>`
        : issue.key ? html`<span class="mono">${issue.key}</span>` : html`<span class="muted">Not created yet</span>`}
        ${issue.project && html` <span class="muted">in <span class="mono tracker-project">${issue.project}</span></span>`}
        ${issue.state && html` · <span class="tracker-state">${issue.state}</span>`}
        ${' · '}<span class=${`badge ${issue.syncState === 'failing' ? 'bad' : issue.syncState === 'synced' ? 'ok' : ''}`} role="status">${SYNC_LABELS[issue.syncState] || issue.syncState}</span>
        ${issue.syncedAt && html` <span class="muted small">synced <time datetime=${issue.syncedAt}>${fmtDate(issue.syncedAt)}</time></span>`}</p>
      ${issue.lastError && html`<p class="error break">${issue.lastError}</p>`}
    </section>`
  }
  const t = tracker.data
  if (!t || item.duplicateOfId) return null
  return html`<div class="actions tracker-push">
    <button type="button" disabled=${busy} onClick=${push}>${t.kind ? `Create issue in ${name(t.kind)}` : 'Create tracker issue'}</button>
    <${ErrorBox} error=${error} />
  </div>`
}
