// Webhook endpoints of the Org (Standard Webhooks) and their delivery log, through the /v1 webhook routes.
import { useState } from 'preact/hooks'
import { api, qs } from '@fixloop/api'
import { html, useAction, useLoad, ErrorBox, CopyField, fmtDate } from '@fixloop/ui'
import { eventLabel, deliveryLabel } from '@fixloop/labels'
import { useReauth, ConfirmIdentity, confirmFirst, canConfirm } from '@fixloop/reauth'

/** The last attempt's answer in words: the HTTP status, or why there was none (timeout, refused …). */
function lastAnswer(d) {
  const last = d.log.length ? d.log[d.log.length - 1] : null
  if (d.lastStatus !== null && d.lastStatus !== undefined) return `HTTP ${d.lastStatus}`
  return (last && last.error) || '—'
}

function Deliveries({ org, hook }) {
  const [cursor, setCursor] = useState(undefined)
  const page = useLoad(() => api('GET', `/v1/webhooks/${hook.id}/deliveries${qs({ cursor, limit: 20 })}`, { org: org.id }), [hook.id, cursor])
  const [redeliver, , error] = useAction(async (d) => {
    await api('POST', `/v1/webhooks/deliveries/${d.id}/redeliver`, { org: org.id })
    page.reload()
  })
  return html`<${ErrorBox} error=${page.error || error} />
    ${page.data &&
    (page.data.data.length === 0
      ? html`<p class="muted">No deliveries yet.</p>`
      : html`<div class="table-wrap" tabindex="0" role="region" aria-label=${`Deliveries to ${hook.url}`}><table class="deliveries stack">
        <thead><tr><th scope="col">Event</th><th scope="col">State</th><th scope="col">Attempts</th><th scope="col">Updated</th><th scope="col"><span class="sr-only">Actions</span></th><th scope="col">Last answer</th></tr></thead>
        <tbody>${page.data.data.map(
          (d) => html`<tr><td data-label="Event">${eventLabel(d.eventType)} <span class="muted">#${d.eventSeq}</span></td><td data-label="State">${deliveryLabel(d.status, d.attempts)}</td>
            <td data-label="Attempts">${d.attempts}</td><td data-label="Updated">${fmtDate(d.updatedAt)}</td>
            <td class="action"><button type="button" class="small" onClick=${() => redeliver(d)}>Redeliver <span class="sr-only">${eventLabel(d.eventType)} #${d.eventSeq}</span></button></td>
            <td data-label="Last answer" class="answer">${lastAnswer(d)}</td></tr>`,
        )}</tbody></table></div>
        ${page.data.nextCursor && html`<button type="button" onClick=${() => setCursor(page.data.nextCursor)}>Older deliveries</button>`}`)}`
}

export function WebhooksPage({ org }) {
  const hooks = useLoad(() => api('GET', '/v1/webhooks', { org: org.id }), [org.id])
  const [url, setUrl] = useState('')
  const [events, setEvents] = useState('')
  const [created, setCreated] = useState(null)
  const [open, setOpen] = useState(null)
  // Every event from now on, report content included, goes to the endpoint, also after this session ends:
  // the admin confirms it is them (password, or the identity provider), as for a new key.
  const reauth = useReauth()
  const [password, setPassword] = useState('')
  const [create, busy, error] = useAction(async () => {
    const list = events.split(/[\s,]+/).filter(Boolean)
    await confirmFirst(reauth.data, 'webhook_create', password)
    setCreated(await api('POST', '/v1/webhooks', { org: org.id, body: { url, ...(list.length ? { events: list } : {}) } }))
    setUrl('')
    setPassword('')
    reauth.reload()
    hooks.reload()
  })
  const [remove, , removeError] = useAction(async (h) => {
    if (!confirm(`Delete the endpoint ${h.url}? Its delivery log goes with it.`)) return
    await api('DELETE', `/v1/webhooks/${h.id}`, { org: org.id })
    hooks.reload()
  })
  return html`<h1>Webhooks of ${org.name}</h1>
    <p>Signed HTTP callbacks (Standard Webhooks) for report and agent-run events. See docs/events.md.</p>
    <section aria-labelledby="new-hook"><h2 id="new-hook">New endpoint</h2>
      <form class="inline" onSubmit=${(e) => (e.preventDefault(), create())}>
        <div class="field"><label for="hook-url">Endpoint URL</label><input id="hook-url" type="url" required placeholder="https://example.com/hooks/fixloop" value=${url} onInput=${(e) => setUrl(e.target.value)} /></div>
        <div class="field"><label for="hook-events">Event types</label><input id="hook-events" placeholder="all" aria-describedby="hook-events-hint" value=${events} onInput=${(e) => setEvents(e.target.value)} />
          <small id="hook-events-hint">Comma-separated, e.g. feedback.status_changed. Empty: all.</small></div>
        <p class="hint wide">The endpoint receives every event, report content included, also after you sign out: confirm it is you to add it.${reauth.data && !reauth.data.hasPassword ? ' Confirm first, then fill in the form: what is typed here is not kept across the provider’s sign-in page.' : ''}</p>
        <${ConfirmIdentity} status=${reauth.data} purpose="webhook_create" id="hook-password" password=${password} setPassword=${setPassword} what="to add the endpoint" />
        <button type="submit" class="primary" disabled=${busy || !canConfirm(reauth.data, 'webhook_create')}>Add endpoint</button>
      </form><${ErrorBox} error=${error} />
      ${created &&
      html`<div class="notice" role="status"><p><strong>Copy the signing secret now.</strong> It is shown this once.</p>
        <${CopyField} label="Webhook secret" id="hook-secret" value=${created.secret} />
        <button type="button" onClick=${() => setCreated(null)}>Done</button></div>`}
    </section>
    <section aria-labelledby="hooks"><h2 id="hooks">Endpoints</h2>
      <${ErrorBox} error=${hooks.error || removeError} />
      ${hooks.data && hooks.data.data.length === 0 && html`<p class="muted">No endpoint yet.</p>`}
      ${hooks.data &&
      hooks.data.data.map(
        (h) => html`<article class="run">
          <h3 class="break">${h.url}</h3>
          <p>${h.enabled ? 'Enabled' : `Disabled${h.disabledReason ? `: ${h.disabledReason}` : ''}`} · events: ${h.events.length ? h.events.map(eventLabel).join(', ') : 'all'} · since ${fmtDate(h.createdAt)}</p>
          <div class="actions">
            <button type="button" aria-expanded=${open === h.id} onClick=${() => setOpen(open === h.id ? null : h.id)}>${open === h.id ? 'Hide deliveries' : 'Deliveries'}</button>
            <button type="button" class="danger" onClick=${() => remove(h)}>Delete <span class="sr-only">${h.url}</span></button>
          </div>
          ${open === h.id && html`<${Deliveries} org=${org} hook=${h} />`}
        </article>`,
      )}
    </section>`
}
