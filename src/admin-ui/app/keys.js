// The Org's sk_ API keys (created with the plaintext shown once, revoked) and its audit log.
import { useLayoutEffect, useState } from 'preact/hooks'
import { api, qs } from '@fixloop/api'
import { html, useAction, useLoad, ErrorBox, CopyField, fmtDate } from '@fixloop/ui'
import { auditLabel, words, ACTOR_LABELS } from '@fixloop/labels'
import { useReauth, confirmedFor, proofOf, canConfirm, ConfirmIdentity } from '@fixloop/reauth'

/** The key's name survives the round trip to the identity provider (this tab only). */
const PENDING_NAME = 'fixloop.pendingKeyName'

/** Who did it, for people: the admin's email (the API resolves it), the CLI, or fixloop itself. */
export function actorText(e) {
  if (e.actorLabel) return e.actorLabel
  if (ACTOR_LABELS[e.actor]) return ACTOR_LABELS[e.actor]
  return e.actor.startsWith('admin:') ? 'An admin since deleted' : words(e.actor)
}

const VIA = { setup_link: 'first-run setup link', env: 'environment variables' }
/** The entry's details that help a person (setting names, how an admin was made), never ids. */
function detailText(e) {
  const d = e.data || {}
  const parts = []
  if (Array.isArray(d.settings) && d.settings.length) parts.push(`settings: ${d.settings.map((k) => words(k.replace(/([a-z])([A-Z])/g, '$1 $2')).toLowerCase()).join(', ')}`)
  if (d.via) parts.push(`via ${VIA[d.via] || words(d.via).toLowerCase()}`)
  if (d.role) parts.push(`role: ${d.role}`)
  if (d.gitUrl) parts.push(String(d.gitUrl))
  return parts.join(' · ')
}

export function KeysPage({ org }) {
  const keys = useLoad(() => api('GET', `/admin/api/orgs/${org.id}/keys`), [org.id])
  const [name, setName] = useState('')
  const [password, setPassword] = useState('')
  const [created, setCreated] = useState(null)
  const reauth = useReauth()
  // Back from the identity provider: the name typed before is put back, to finish the creation. Before the
  // page is painted (a layout effect): with a plain effect the confirmation showed beside an empty name for
  // a frame, and a reader (or a test) that looked then found the name lost.
  useLayoutEffect(() => {
    if (confirmedFor(reauth.data, 'key_create')) setName(sessionStorage.getItem(PENDING_NAME) || '')
  }, [reauth.data])
  const typeName = (value) => {
    setName(value)
    sessionStorage.setItem(PENDING_NAME, value)
  }
  const [create, busy, error] = useAction(async () => {
    try {
      setCreated(await api('POST', `/admin/api/orgs/${org.id}/keys`, { body: { name, ...proofOf(reauth.data, 'key_create', password) } }))
      setName('')
      sessionStorage.removeItem(PENDING_NAME)
      keys.reload()
    } finally {
      setPassword('')
      reauth.reload() // a confirmation at the provider is used up by the attempt
    }
  })
  const [revoke, , revokeError] = useAction(async (k) => {
    if (!confirm(`Revoke the key "${k.name || k.prefix}"? Clients using it are refused at once.`)) return
    await api('DELETE', `/admin/api/orgs/${org.id}/keys/${k.id}`)
    keys.reload()
  })
  return html`<h1>API keys of ${org.name}</h1>
    <p>Server-side keys (<code>sk_…</code>) for the API: list, read and move reports, mint user tokens.</p>
    <section aria-labelledby="new-key"><h2 id="new-key">New key</h2>
      <p class="hint">A key works until it is revoked, even after you sign out: confirm it is you to create one.</p>
      <form class="inline" onSubmit=${(e) => (e.preventDefault(), create())}>
        <div class="field"><label for="key-name">Key name</label><input id="key-name" maxlength="200" placeholder="e.g. backend" value=${name} onInput=${(e) => typeName(e.target.value)} /></div>
        <${ConfirmIdentity} status=${reauth.data} purpose="key_create" id="key-password" password=${password} setPassword=${setPassword} />
        <button type="submit" class="primary" disabled=${busy || !canConfirm(reauth.data, 'key_create')}>Create key</button>
      </form><${ErrorBox} error=${error || reauth.error} />
      ${created &&
      html`<div class="notice" role="status"><p><strong>Copy this key now.</strong> It is shown this once; only its prefix is kept.</p>
        <${CopyField} label="New API key" id="new-key-value" value=${created.key} />
        <button type="button" onClick=${() => setCreated(null)}>Done</button></div>`}
    </section>
    <section aria-labelledby="key-list"><h2 id="key-list">Keys</h2>
      <${ErrorBox} error=${keys.error || revokeError} />
      ${keys.data &&
      html`<div class="table-wrap" tabindex="0" role="region" aria-label="Key table"><table>
        <thead><tr><th scope="col">Prefix</th><th scope="col">Name</th><th scope="col">Created by</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">State</th></tr></thead>
        <tbody>${keys.data.data.map(
          (k) => html`<tr><td class="mono">${k.prefix}…</td><td>${k.name || '—'}</td><td>${ACTOR_LABELS[k.createdBy] || k.createdBy}</td><td>${fmtDate(k.createdAt)}</td><td>${k.lastUsedAt ? fmtDate(k.lastUsedAt) : 'never'}</td>
            <td>${k.revokedAt ? `revoked ${fmtDate(k.revokedAt)}` : html`<button type="button" class="danger small" onClick=${() => revoke(k)}>Revoke <span class="sr-only">${k.name || k.prefix}</span></button>`}</td></tr>`,
        )}</tbody></table></div>`}
    </section>`
}

export function AuditPage({ org }) {
  const [cursor, setCursor] = useState(undefined)
  const page = useLoad(() => api('GET', `/admin/api/orgs/${org.id}/audit${qs({ cursor, limit: 50 })}`), [org.id, cursor])
  return html`<h1>Audit log of ${org.name}</h1>
    <${ErrorBox} error=${page.error} />
    ${page.data &&
    html`<div class="table-wrap" tabindex="0" role="region" aria-label="Audit log table"><table class="stack">
      <thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">What</th><th scope="col">Target</th><th scope="col">Address</th></tr></thead>
      <tbody>${page.data.data.map(
        (e) => html`<tr><td data-label="When">${fmtDate(e.createdAt)}</td><td data-label="Who">${actorText(e)}</td>
          <td data-label="What">${auditLabel(e.action)}${detailText(e) && html`<br /><span class="muted small">${detailText(e)}</span>`}</td>
          <td data-label="Target">${e.targetLabel || (e.targetId ? html`<span class="mono small">${e.targetId}</span>` : '—')}</td><td data-label="Address">${e.ip || '—'}</td></tr>`,
      )}</tbody>
    </table></div>
    ${page.data.nextCursor && html`<button type="button" onClick=${() => setCursor(page.data.nextCursor)}>Older entries</button>`}`}`
}
