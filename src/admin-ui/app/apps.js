// Orgs, Apps and an App's settings, signing secret and widget snippet.
import { useEffect, useState } from 'preact/hooks'
import { api } from '@fixloop/api'
import { html, Link, navigate, useAction, useLoad, waitingFor, PendingSection, ErrorBox, Dialog, CopyField, fmtDate } from '@fixloop/ui'
import { useReauth, confirmedFor, proofOf, canConfirm, ConfirmIdentity } from '@fixloop/reauth'
import { PROCESSING_LABELS } from '@fixloop/labels'
import { TrackerSection } from '@fixloop/trackers'
import { SmtpSection } from '@fixloop/smtp'

export function OrgsPage({ me, orgs, onChange }) {
  const [name, setName] = useState('')
  const [run, busy, error] = useAction(async () => {
    const org = await api('POST', '/admin/api/orgs', { body: { name } })
    setName('')
    await onChange()
    navigate(`/admin/o/${org.id}/apps`)
  })
  return html`<h1>Orgs</h1>
    ${orgs.length === 0 && html`<p>No Org yet.${me.isOwner ? ' Create the first one below.' : ' Ask the instance owner to add you to one.'}</p>`}
    <ul class="cards">
      ${orgs.map((o) => html`<li><${Link} href=${`/admin/o/${o.id}/inbox`}>${o.name}</${Link}> <span class="muted">${o.role === 'owner' ? 'Owner' : 'Member'} · <span class="mono">${o.id}</span></span></li>`)}
    </ul>
    ${me.isOwner &&
    html`<section aria-labelledby="new-org"><h2 id="new-org">New Org</h2>
      <form class="inline" onSubmit=${(e) => (e.preventDefault(), run())}>
        <div class="field"><label for="org-name">Org name</label><input id="org-name" required maxlength="200" value=${name} onInput=${(e) => setName(e.target.value)} /></div>
        <button type="submit" class="primary" disabled=${busy}>Create Org</button>
      </form><${ErrorBox} error=${error} /></section>`}`
}

export function AppsPage({ org }) {
  const apps = useLoad(() => api('GET', `/admin/api/orgs/${org.id}/apps`), [org.id])
  const costs = useLoad(() => api('GET', `/admin/api/orgs/${org.id}/costs`), [org.id])
  const costOf = (id) => (costs.data && costs.data.data.find((c) => c.appId === id)) || { runs: 0, costUsd: 0 }
  const [name, setName] = useState('')
  const [run, busy, error] = useAction(async () => {
    const app = await api('POST', `/admin/api/orgs/${org.id}/apps`, { body: { name } })
    navigate(`/admin/o/${org.id}/apps/${app.id}`)
  })
  return html`<h1>Apps of ${org.name}</h1>
    <${ErrorBox} error=${apps.error} />
    ${apps.data &&
    (apps.data.data.length === 0
      ? html`<p>No App yet.</p>`
      : html`<div class="table-wrap" tabindex="0" role="region" aria-label="App table"><table>
          <caption class="sr-only">Apps</caption>
          <thead><tr><th scope="col">Name</th><th scope="col">Public key</th><th scope="col">Mode</th><th scope="col">Agent runs (30 days)</th><th scope="col">Agent cost (30 days)</th><th scope="col">Created</th></tr></thead>
          <tbody>${apps.data.data.map(
            (a) => html`<tr><td><${Link} href=${`/admin/o/${org.id}/apps/${a.id}`}>${a.name}</${Link}></td><td class="mono">${a.publicKey}</td><td>${PROCESSING_LABELS[a.processingMode] || a.processingMode}</td><td>${costOf(a.id).runs}</td><td>$${costOf(a.id).costUsd.toFixed(2)}</td><td>${fmtDate(a.createdAt)}</td></tr>`,
          )}</tbody></table></div>`)}
    ${org.role === 'owner' &&
    html`<section aria-labelledby="new-app"><h2 id="new-app">New App</h2>
      <form class="inline" onSubmit=${(e) => (e.preventDefault(), run())}>
        <div class="field"><label for="app-name">App name</label><input id="app-name" required maxlength="200" value=${name} onInput=${(e) => setName(e.target.value)} /></div>
        <button type="submit" class="primary" disabled=${busy}>Create App</button>
      </form><${ErrorBox} error=${error} /></section>`}`
}

/** The App's proof-of-work levels (contract "Abuse defence"; off by default so plain public clients keep working). */
const POW_LEVELS = [
  ['off', 'Off'],
  ['normal', 'Normal (recommended for public Apps)'],
  ['high', 'High (under attack; slower on old phones)'],
]

/** Session replay modes (docs/api.md "Session replay"): the label says what is masked. */
const REPLAY_MODES = [
  ['off', 'Off'],
  ['masked', 'Masked: all text hidden'],
  ['inputs', 'Inputs hidden only'],
]

function Settings({ org, app, onSaved }) {
  const [f, setF] = useState({
    name: app.name,
    slug: app.slug,
    description: app.description,
    publicSubmissionEnabled: app.publicSubmissionEnabled,
    allowedOrigins: app.allowedOrigins.join('\n'),
    processingMode: app.processingMode,
    batchEnabled: app.batchEnabled,
    batchWindowHours: app.batchWindowHours,
    proofOfWork: app.proofOfWork || 'off',
    spamEvents: !!app.spamEvents,
    spamRetentionDays: app.spamRetentionDays ?? 30,
    retentionDays: app.retentionDays ?? 0,
    replayMode: app.replay?.mode ?? 'off',
    replaySeconds: app.replay?.seconds ?? 60,
  })
  const [saved, setSaved] = useState(false)
  const set = (k) => (e) => setF({ ...f, [k]: e.target.type === 'checkbox' ? e.target.checked : e.target.value })
  const [run, busy, error] = useAction(async () => {
    setSaved(false)
    const { replayMode, replaySeconds, ...rest } = f
    const body = {
      ...rest,
      batchWindowHours: Number(f.batchWindowHours),
      spamRetentionDays: Number(f.spamRetentionDays),
      retentionDays: Number(f.retentionDays),
      replay: { mode: replayMode, seconds: Number(replaySeconds) },
      allowedOrigins: f.allowedOrigins.split(/[\s,]+/).filter(Boolean),
    }
    onSaved(await api('PATCH', `/admin/api/orgs/${org.id}/apps/${app.id}`, { body }))
    setSaved(true)
  })
  const ro = org.role !== 'owner'
  return html`<section aria-labelledby="settings"><h2 id="settings">Settings</h2>
    <form class="grid" onSubmit=${(e) => (e.preventDefault(), run())}>
      <fieldset disabled=${ro}>
      <legend class="sr-only">App settings</legend>
      <div class="field"><label for="s-name">Name</label><input id="s-name" required value=${f.name} onInput=${set('name')} /></div>
      <div class="field"><label for="s-slug">Slug</label><input id="s-slug" required pattern="[a-z0-9][a-z0-9-]{0,63}" value=${f.slug} onInput=${set('slug')} /></div>
      <div class="field wide"><label for="s-desc">Description</label><textarea id="s-desc" rows="2" value=${f.description} onInput=${set('description')}></textarea></div>
      <div class="field check"><input id="s-public" type="checkbox" checked=${f.publicSubmissionEnabled} onChange=${set('publicSubmissionEnabled')} /><label for="s-public">Accept public submissions (no user token)</label></div>
      <div class="field"><label for="s-pow">Proof of work</label>
        <select id="s-pow" value=${f.proofOfWork} onChange=${set('proofOfWork')} aria-describedby="pow-hint">
          ${POW_LEVELS.map(([v, label]) => html`<option value=${v}>${label}</option>`)}</select>
        <small id="pow-hint">The widget solves a small puzzle before each public report: bots pay, people do not notice (docs/widget.md, "Abuse defence").</small></div>
      ${f.publicSubmissionEnabled && f.proofOfWork === 'off' &&
      html`<p class="notice wide" id="pow-advice">This App accepts public reports and its key is in your web pages: turn proof of work on (Normal) so a bot flood lands in the spam folder, not the inbox. Backend scripts in public mode then solve a challenge too, or use private mode.</p>`}
      <div class="field check"><input id="s-spam-events" type="checkbox" checked=${f.spamEvents} onChange=${set('spamEvents')} /><label for="s-spam-events">Spam still sends events (webhooks, Slack)</label></div>
      <div class="field"><label for="s-spam-retention">Keep spam (days)</label><input id="s-spam-retention" type="number" min="0" max="3650" aria-describedby="spam-retention-hint" value=${f.spamRetentionDays} onInput=${set('spamRetentionDays')} />
        <small id="spam-retention-hint">Reports in the spam folder longer than this are deleted with their attachments. 0 keeps them.</small></div>
      <div class="field"><label for="s-retention">Keep reports (days)</label><input id="s-retention" type="number" min="0" max="3650" aria-describedby="retention-hint" value=${f.retentionDays} onInput=${set('retentionDays')} />
        <small id="retention-hint">Reports older than this are deleted with their attachments. 0 keeps them forever.</small></div>
      <div class="field"><label for="s-replay">Session replay</label>
        <select id="s-replay" value=${f.replayMode} onChange=${set('replayMode')} aria-describedby="replay-hint">
          ${REPLAY_MODES.map(([v, label]) => html`<option value=${v}>${label}</option>`)}</select>
        <small id="replay-hint">The widget keeps the last seconds of the page in the browser and sends them only with a report; the server scrubs them like report text. Masked also blocks images and video. Elements with class fixloop-block are never recorded.</small></div>
      <div class="field"><label for="s-replay-seconds">Replay length (seconds)</label><input id="s-replay-seconds" type="number" min="10" max="300" disabled=${f.replayMode === 'off'} value=${f.replaySeconds} onInput=${set('replaySeconds')} /></div>
      <div class="field wide"><label for="s-origins">Allowed origins</label>
        <textarea id="s-origins" rows="3" aria-describedby="origins-hint" value=${f.allowedOrigins} onInput=${set('allowedOrigins')}></textarea>
        <small id="origins-hint">One per line, e.g. https://app.example.com. Empty: any origin.</small></div>
      <div class="field"><label for="s-mode">Processing mode</label>
        <select id="s-mode" value=${f.processingMode} onChange=${set('processingMode')}>
          <option value="manual">${PROCESSING_LABELS.manual}</option><option value="auto_pr">${PROCESSING_LABELS.auto_pr}</option></select></div>
      <div class="field check"><input id="s-batch" type="checkbox" checked=${f.batchEnabled} onChange=${set('batchEnabled')} /><label for="s-batch">Batch reports into windows</label></div>
      <div class="field"><label for="s-window">Batch window (hours)</label><input id="s-window" type="number" min="1" max="720" value=${f.batchWindowHours} onInput=${set('batchWindowHours')} /></div>
      <div class="actions wide"><button type="submit" class="primary" disabled=${busy}>Save settings</button>
        ${saved && html`<span role="status">Saved.</span>`}</div>
      </fieldset>
    </form><${ErrorBox} error=${error} /></section>`
}

function Secret({ org, app }) {
  const [dialog, setDialog] = useState(null)
  const [password, setPassword] = useState('')
  const [secret, setSecret] = useState(null)
  const [rotated, setRotated] = useState(false)
  const reauth = useReauth()
  // Back from the identity provider: the dialog the confirmation is for opens to finish it.
  useEffect(() => {
    if (confirmedFor(reauth.data, 'secret_reveal')) setDialog('reveal')
    if (confirmedFor(reauth.data, 'secret_rotate')) setDialog('rotate')
  }, [reauth.data])
  const [reveal, revealing, revealError] = useAction(async () => {
    try {
      const out = await api('POST', `/admin/api/orgs/${org.id}/apps/${app.id}/secret/reveal`, { body: proofOf(reauth.data, 'secret_reveal', password) })
      setSecret(out.signingSecret)
      setPassword('')
      setDialog(null)
    } finally {
      reauth.reload() // a confirmation at the provider is used up by the attempt
    }
  })
  const [rotate, rotating, rotateError] = useAction(async () => {
    try {
      const out = await api('POST', `/admin/api/orgs/${org.id}/apps/${app.id}/secret/rotate`, { body: proofOf(reauth.data, 'secret_rotate', password) })
      setSecret(out.signingSecret)
      setRotated(true)
      setPassword('')
      setDialog(null)
    } finally {
      reauth.reload()
    }
  })
  return html`<section aria-labelledby="secret"><h2 id="secret">Signing secret</h2>
    <p>Your backend signs user tokens (HS256) with this secret. It is hidden until you confirm it is you (your password, or your identity provider).</p>
    ${secret
      ? html`<${CopyField} label="Signing secret (hex)" id="secret-value" value=${secret} />
        ${rotated && html`<p role="status">Rotated. Tokens signed with the old secret no longer work.</p>`}
        <button type="button" onClick=${() => setSecret(null)}>Hide</button>`
      : html`<p class="mono masked" aria-label="Signing secret hidden">••••••••••••••••••••••••••••••••</p>`}
    <div class="actions">
      ${!secret && html`<button type="button" onClick=${() => setDialog('reveal')}>Reveal</button>`}
      <button type="button" class="danger" onClick=${() => setDialog('rotate')}>Rotate secret</button>
    </div>
    ${dialog === 'reveal' &&
    html`<${Dialog} title="Reveal the signing secret" onClose=${() => setDialog(null)}>
      <form onSubmit=${(e) => (e.preventDefault(), reveal())}>
        <${ConfirmIdentity} status=${reauth.data} purpose="secret_reveal" id="reveal-password" password=${password} setPassword=${setPassword} autofocus=${true} />
        <p class="hint">Each reveal is written to the audit log.</p>
        <${ErrorBox} error=${revealError || reauth.error} />
        <div class="actions"><button type="submit" class="primary" disabled=${revealing || !canConfirm(reauth.data, 'secret_reveal')} autofocus=${confirmedFor(reauth.data, 'secret_reveal')}>Reveal</button><button type="button" onClick=${() => setDialog(null)}>Cancel</button></div>
      </form></${Dialog}>`}
    ${dialog === 'rotate' &&
    html`<${Dialog} title="Rotate the signing secret?" onClose=${() => setDialog(null)}>
      <form onSubmit=${(e) => (e.preventDefault(), rotate())}>
        <p><strong>Every outstanding user token stops working at once.</strong> Users of ${app.name} in private mode cannot submit until your backend signs new tokens with the new secret.</p>
        <${ConfirmIdentity} status=${reauth.data} purpose="secret_rotate" id="rotate-password" password=${password} setPassword=${setPassword} />
        <p class="hint">The new secret is shown once rotated; each rotation is written to the audit log.</p>
        <${ErrorBox} error=${rotateError || reauth.error} />
        <div class="actions"><button type="submit" class="danger" disabled=${rotating || !canConfirm(reauth.data, 'secret_rotate')}>Rotate now</button><button type="button" autofocus onClick=${() => setDialog(null)}>Cancel</button></div>
      </form>
    </${Dialog}>`}
  </section>`
}

/** The scheme and host a git remote is reached at (ssh for git@host:path), as the server compares them. */
function remoteOf(gitUrl) {
  const scp = /^[^@/]+@([^:/]+):/.exec(gitUrl)
  if (scp) return `ssh://${scp[1].toLowerCase()}`
  try {
    const u = new URL(gitUrl)
    return `${u.protocol}//${u.host}`
  } catch {
    return 'local'
  }
}

function Repo({ org, app, me }) {
  const current = useLoad(() => api('GET', `/admin/api/orgs/${org.id}/apps/${app.id}/repo`), [app.id])
  const [f, setF] = useState(null)
  const [saved, setSaved] = useState('')
  /** The git host's webhook secret, shown once right after the first connection (docs/agents.md). */
  const [hookSecret, setHookSecret] = useState(null)
  // The commands run on this server for every queued report, after this session too: the admin confirms
  // it is them (password, or the identity provider), as for a new key.
  const reauth = useReauth()
  const [password, setPassword] = useState('')
  const c = current.data && current.data.connection
  const form = f || {
    gitUrl: c ? c.gitUrl : '',
    baseBranch: c ? c.baseBranch : 'main',
    host: c ? c.host : 'github',
    hostApiUrl: c && c.hostApiUrl ? c.hostApiUrl : '',
    hostToken: '',
    agent: c ? c.agent : 'claude-code',
    agentCommand: c && c.agentCommand ? c.agentCommand : '',
    model: c && c.model ? c.model : '',
    prMode: c ? c.prMode : 'ready',
    verifyCommand: c && c.verifyCommand ? c.verifyCommand : '',
    maxFiles: c ? c.maxFiles : 20,
    maxLines: c ? c.maxLines : 1000,
    runsPerDay: c ? c.runsPerDay : 20,
    maxCostUsdPerMonth: c ? c.maxCostUsdPerMonth : 50,
  }
  const set = (k) => (e) => setF({ ...form, [k]: e.target.value })
  const [save, busy, error] = useAction(async () => {
    const body = { ...form, maxFiles: Number(form.maxFiles), maxLines: Number(form.maxLines), runsPerDay: Number(form.runsPerDay), maxCostUsdPerMonth: Number(form.maxCostUsdPerMonth) }
    for (const k of ['hostApiUrl', 'agentCommand', 'model', 'verifyCommand', 'hostToken']) if (!body[k]) delete body[k]
    const res = await api('PUT', `/admin/api/orgs/${org.id}/apps/${app.id}/repo`, { body: { ...body, ...proofOf(reauth.data, 'repo_connect', password) } })
    setPassword('')
    reauth.reload()
    setHookSecret(res && res.connection && res.connection.webhookSecret ? { secret: res.connection.webhookSecret, path: res.connection.webhookPath } : null)
    setF(null)
    setSaved('Connected.')
    current.reload()
  })
  const [disconnect, , disconnectError] = useAction(async () => {
    await api('DELETE', `/admin/api/orgs/${org.id}/apps/${app.id}/repo`)
    setF(null)
    setSaved('Disconnected.')
    current.reload()
  })
  const ro = !me.isOwner
  // The form shows whole, once: with the stored connection and the way this admin confirms.
  const waiting = ro ? waitingFor(current) : waitingFor(current, reauth)
  if (waiting) return html`<${PendingSection} id="repo" title="Repository and agent" load=${waiting} />`
  // The stored token is kept only while it goes where it was given for: the same host, API URL and git
  // remote (docs/agents.md); changed, the server asks for it again, so the form does too.
  const keepsToken = c && c.hasHostToken && form.host === c.host && form.hostApiUrl.trim().replace(/\/+$/, '') === (c.hostApiUrl || '') && remoteOf(form.gitUrl.trim()) === remoteOf(c.gitUrl)
  const field = (id, label, input, hint) => html`<div class="field"><label for=${id}>${label}</label>${input}${hint && html`<small>${hint}</small>`}</div>`
  return html`<section aria-labelledby="repo"><h2 id="repo">Repository and agent</h2>
    <p>${c ? html`Connected to <span class="mono break">${c.gitUrl}</span>${c.hasHostToken ? ' (token stored)' : ''}.` : 'Not connected: queued reports wait for a repository.'}
      ${ro ? ' Only the instance owner changes this: the agent runs commands on this server.' : ''}</p>
    ${c && c.webhookPath && html`<p class="muted">Git host webhook: <span class="mono break">${location.origin}${c.webhookPath}</span> (merges, closes and reviews of fixloop's pull requests; docs/agents.md).</p>`}
    ${hookSecret && html`<p class="notice" role="status">Webhook secret, shown once: <code class="mono break">${hookSecret.secret}</code>. Set it as the webhook's secret on your git host; <code>fixloop app rotate-webhook-secret ${app.id}</code> makes a new one.</p>`}
    <form class="grid" onSubmit=${(e) => (e.preventDefault(), save())}>
      <fieldset disabled=${ro}>
      <legend class="sr-only">Repository and agent</legend>
      ${field('r-url', 'Git URL', html`<input id="r-url" required value=${form.gitUrl} onInput=${set('gitUrl')} placeholder="https://github.com/owner/repo.git" />`)}
      ${field('r-branch', 'Base branch', html`<input id="r-branch" value=${form.baseBranch} onInput=${set('baseBranch')} />`)}
      ${field('r-host', 'Git host', html`<select id="r-host" value=${form.host} onChange=${set('host')}><option>github</option><option>gitea</option><option>gitlab</option><option value="none">none (push a branch only)</option></select>`)}
      ${field('r-api', 'Host API URL', html`<input id="r-api" value=${form.hostApiUrl} onInput=${set('hostApiUrl')} />`, 'Empty: the host’s default. A host inside your network is called unless the server runs with FIXLOOP_GIT_HOST_ALLOW_PRIVATE=0; link-local and cloud metadata addresses never are.')}
      ${field('r-token', 'Host access token', html`<input id="r-token" type="password" autocomplete="off" required=${Boolean(c && c.hasHostToken && !keepsToken)} value=${form.hostToken} onInput=${set('hostToken')} />`, keepsToken ? 'Empty keeps the stored token.' : c && c.hasHostToken ? 'Required again: the host, its API URL or the git remote changed, and the stored token is only sent where it was given for.' : 'Stored encrypted, never shown again.')}
      ${field('r-pr', 'Pull request mode', html`<select id="r-pr" value=${form.prMode} onChange=${set('prMode')}><option>ready</option><option>draft</option><option value="branch">branch (push only)</option></select>`)}
      ${field('r-agent', 'Agent preset', html`<select id="r-agent" value=${form.agent} onChange=${set('agent')}><option>claude-code</option><option>codex</option><option>aider</option><option value="command">command (your own)</option></select>`)}
      ${form.agent === 'command' && field('r-cmd', 'Agent command', html`<input id="r-cmd" class="mono" value=${form.agentCommand} onInput=${set('agentCommand')} />`)}
      ${field('r-model', 'Model', html`<input id="r-model" value=${form.model} onInput=${set('model')} />`)}
      ${field('r-verify', 'Verify command', html`<input id="r-verify" class="mono" value=${form.verifyCommand} onInput=${set('verifyCommand')} />`, 'Runs after the agent; a failure fails the run.')}
      ${field('r-files', 'Max files changed', html`<input id="r-files" type="number" min="1" value=${form.maxFiles} onInput=${set('maxFiles')} />`)}
      ${field('r-lines', 'Max lines changed', html`<input id="r-lines" type="number" min="1" value=${form.maxLines} onInput=${set('maxLines')} />`)}
      ${field('r-runs', 'Runs per day', html`<input id="r-runs" type="number" min="1" value=${form.runsPerDay} onInput=${set('runsPerDay')} />`)}
      ${field('r-cost', 'Max cost per month (USD)', html`<input id="r-cost" type="number" min="0.01" step="0.01" value=${form.maxCostUsdPerMonth} onInput=${set('maxCostUsdPerMonth')} />`)}
      ${!ro && html`<p class="hint wide">The agent and verify commands run on this server for every queued report, also after you sign out: confirm it is you to save.${reauth.data && !reauth.data.hasPassword ? ' Confirm first, then fill in the form: what is typed here is not kept across the provider’s sign-in page.' : ''}</p>
        <${ConfirmIdentity} status=${reauth.data} purpose="repo_connect" id="r-password" password=${password} setPassword=${setPassword} passwordOnly=${true} what="to connect the repository" />`}
      <div class="actions wide"><button type="submit" class="primary" disabled=${busy || (!ro && !canConfirm(reauth.data, 'repo_connect'))}>${c ? 'Save connection' : 'Connect repository'}</button>
        ${c && html`<button type="button" class="danger" onClick=${disconnect}>Disconnect</button>`}
        ${saved && html`<span role="status">${saved}</span>`}</div>
      </fieldset>
    </form><${ErrorBox} error=${error || disconnectError} /></section>`
}

/**
 * How the App tells duplicates apart now: its merge and suggestion bars, and the people's decisions they
 * learned from (docs/triage.md "Learning from the people who triage").
 */
function Dedup({ org, app }) {
  const state = useLoad(() => api('GET', `/v1/apps/${app.id}/triage`, { org: org.id }), [app.id])
  const [done, setDone] = useState(null)
  const [reset, busy, resetError] = useAction(async () => {
    if (!confirm('Forget what the merge bars learned from this App\'s triage decisions? They are deleted; the bars go back to the calibrated ones.')) return
    const r = await api('POST', `/v1/apps/${app.id}/triage/reset`, { org: org.id })
    const n = r.removed.confirmed + r.removed.rejected + r.removed.unmerged
    setDone(`Reset: ${n} decision${n === 1 ? '' : 's'} forgotten; merged automatically at ${bar(r.bars.merge)} or more.`)
    state.reload()
  })
  const bar = (n) => n.toFixed(2)
  // A share of the App's reports as a percentage: whole above 1 %, one decimal under it.
  const percent = (share) => (share * 100 >= 1 ? String(Math.round(share * 100)) : (share * 100).toFixed(1))
  // What the App's arrival order taught (docs/triage.md "Arrival"), said as what it changes.
  const arrival = (a) =>
    a.locality > 0
      ? `in bursts (locality ${bar(a.locality)}): a report that arrived close to another ranks up to +${bar(a.bonusAtMost)} higher in similar reports and suggestions${
          a.mergeBar === null ? '' : `; one that arrived within ${percent(a.mergeWithin)} % of the App's reports of a lead merges into it at ${bar(a.mergeBar)} or more`
        }${a.longAgoBlock ? '; a bug last reported long ago is suggested, not merged' : ''}`
      : 'in no order that helps yet: arrival does not change the ranking'
  if (waitingFor(state)) return html`<${PendingSection} id="dedup" title="Duplicate detection" load=${state} />`
  const d = state.data
  const learned = d.learned.decisions.confirmed + d.learned.decisions.rejected + d.learned.decisions.unmerged > 0
  return html`<section aria-labelledby="dedup"><h2 id="dedup">Duplicate detection</h2>
    <${ErrorBox} error=${resetError} />
    <dl class="facts wide">
      <dt>Merged automatically</dt><dd>at similarity ${bar(d.bars.merge)} or more</dd>
      <dt>When something else agrees</dt><dd>at ${bar(d.bars.corroboratedMerge)} or more, with the same component, console error, stack trace, title or file, path or setting named in both titles</dd>
      <dt>Suggested to a person</dt><dd>from ${bar(d.bars.suggest)} up to the merge bar</dd>
      <dt>Duplicates arrive</dt><dd>${arrival(d.arrival)}</dd>
      <dt>Learned from</dt><dd>${d.learned.decisions.confirmed} confirmed, ${d.learned.decisions.rejected} rejected suggestion${d.learned.decisions.rejected === 1 ? '' : 's'}; ${d.learned.decisions.unmerged} automatic merge${d.learned.decisions.unmerged === 1 ? '' : 's'} undone</dd>
      <dt>Raised after an unmerge</dt><dd>${d.learned.raisedTo === null ? 'no' : `to at least ${bar(d.learned.raisedTo)}`}</dd>
      <dt>Proven lower bar</dt><dd>${d.learned.provenBar === null ? 'not yet (needs 50 decisions, 98 % confirmed)' : bar(d.learned.provenBar)}</dd>
      <dt>Suggestions raised after rejections</dt><dd>${d.learned.suggestRaisedTo === null ? 'no' : `to at least ${bar(d.learned.suggestRaisedTo)}`}</dd>
    </dl>
    <div class="actions"><button type="button" disabled=${busy || !learned} onClick=${reset}>Reset what the bars learned</button>
      <span class="muted small">${learned ? 'Deletes the decisions above; audited.' : 'Nothing learned yet.'}</span>
      ${done && html`<span role="status">${done}</span>`}</div>
  </section>`
}

export function AppPage({ org, appId, me }) {
  const apps = useLoad(() => api('GET', `/admin/api/orgs/${org.id}/apps`), [org.id, appId])
  const [app, setApp] = useState(null)
  const current = app && app.id === appId ? app : apps.data && apps.data.data.find((a) => a.id === appId)
  if (apps.error) return html`<${ErrorBox} error=${apps.error} />`
  if (apps.loading && !current) return html`<p>Loading…</p>`
  if (!current) return html`<h1>404 App not found</h1><p><${Link} href=${`/admin/o/${org.id}/apps`}>All Apps</${Link}></p>`
  const snippet = `<script src="${location.origin}/widget.js" data-public-key="${current.publicKey}" async></script>`
  // The signing secret comes before the sections that load their own data (duplicate detection, repository,
  // tracker, mail): their answers arriving must not move its buttons under a pointer.
  return html`<p class="crumbs"><${Link} href=${`/admin/o/${org.id}/apps`}>Apps</${Link}> / ${current.name}</p>
    <h1>${current.name}</h1>
    <section aria-labelledby="install"><h2 id="install">Install the widget</h2>
      <${CopyField} label="Public key" id="public-key" value=${current.publicKey} />
      <${CopyField} label="Widget script tag" id="snippet" value=${snippet} multiline=${true} />
    </section>
    <${Settings} key=${current.id} org=${org} app=${current} onSaved=${setApp} />
    ${org.role === 'owner' && html`<${Secret} org=${org} app=${current} />`}
    <${Dedup} org=${org} app=${current} />
    ${org.role === 'owner' && html`<${Repo} key=${current.id} org=${org} app=${current} me=${me} />`}
    <p class="muted">App id <span class="mono">${current.id}</span>. The same from the command line: <code>fixloop app connect-repo ${current.id} …</code> (docs/agents.md).</p>
    <${TrackerSection} key=${`tracker-${current.id}`} org=${org} app=${current} />
    <${SmtpSection} key=${`smtp-${current.id}`} org=${org} app=${current} />`
}
