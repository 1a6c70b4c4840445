// The App page's "Mail to reporters" section (docs/email.md "SMTP settings"): set, change and remove the
// App's SMTP server, and send a test mail, through the same /v1/apps/:id/smtp routes as the CLI and the API
// (permission mail.manage: Org owners). The password is never shown: the server says only whether one is
// stored. A server that asks for the password again when host, port or TLS change gets it from this form:
// the field is required then (the rule itself is the server's).
import { useState } from 'preact/hooks'
import { api } from '@fixloop/api'
import { html, useAction, useLoad, waitingFor, PendingSection, ErrorBox, Dialog, fmtDate } from '@fixloop/ui'
import { useReauth, ConfirmIdentity, confirmFirst, canConfirm } from '@fixloop/reauth'

const TLS = [
  ['starttls', 'STARTTLS (port 587)'],
  ['tls', 'TLS from the start (port 465)'],
  ['none', 'None (plain, a local relay only)'],
]

/** The App's SMTP settings; null when none are set (404 not_found). */
async function loadSmtp(org, appId) {
  try {
    return await api('GET', `/v1/apps/${appId}/smtp`, { org: org.id })
  } catch (e) {
    if (e && e.status === 404) return null
    throw e
  }
}

export function SmtpSection({ org, app }) {
  if (org.role !== 'owner') {
    return html`<section aria-labelledby="smtp"><h2 id="smtp">Mail to reporters</h2>
      <p class="muted">Org owners set the SMTP server that tells reporters their problem is fixed.</p></section>`
  }
  return html`<${SmtpForm} org=${org} app=${app} />`
}

function SmtpForm({ org, app }) {
  const current = useLoad(() => loadSmtp(org, app.id), [app.id])
  const [f, setF] = useState(null)
  const [saved, setSaved] = useState('')
  const [dialog, setDialog] = useState(false)
  const [testTo, setTestTo] = useState('')
  const [testResult, setTestResult] = useState(null)
  const s = current.data
  const form = f || { host: s ? s.host : '', port: s ? String(s.port) : '587', tls: s ? s.tls : 'starttls', user: s && s.user ? s.user : '', password: '', removePassword: false, from: s ? s.from : '' }
  const set = (k) => (e) => setF({ ...form, [k]: e.target.type === 'checkbox' ? e.target.checked : e.target.value })
  // Where the mail goes changed: a stored password is not sent to the new server unless typed again.
  const serverChanged = !!s && (form.host.trim() !== s.host || Number(form.port) !== s.port || form.tls !== s.tls)
  const passwordNeeded = !!s && s.passwordSet && serverChanged && !form.removePassword
  // Reporters' mail would go to another server or account, also after this session ends: the admin
  // confirms it is them (the server asks the same; the From address alone is no new destination).
  const reauth = useReauth()
  const [confirmPassword, setConfirmPassword] = useState('')
  const retargets = !s || serverChanged || (form.user.trim() || null) !== s.user || !!form.password || form.removePassword
  const [save, busy, error] = useAction(async () => {
    setSaved('')
    const body = { host: form.host.trim(), port: Number(form.port), tls: form.tls, from: form.from.trim(), user: form.user.trim() || null }
    if (form.removePassword) body.password = null
    else if (form.password) body.password = form.password
    if (retargets) await confirmFirst(reauth.data, 'smtp_change', confirmPassword)
    await api('PUT', `/v1/apps/${app.id}/smtp`, { org: org.id, body })
    setConfirmPassword('')
    reauth.reload()
    setF(null)
    setSaved(s ? 'Saved.' : 'Mail settings saved.')
    current.reload()
  })
  const [sendTest, testing, testError] = useAction(async () => {
    setTestResult(null)
    setTestResult(await api('POST', `/v1/apps/${app.id}/smtp/test`, { org: org.id, body: { to: testTo.trim() } }))
  })
  const [remove, removing, removeError] = useAction(async () => {
    await api('DELETE', `/v1/apps/${app.id}/smtp`, { org: org.id })
    setDialog(false)
    setF(null)
    setTestResult(null)
    setSaved('Mail settings removed.')
    current.reload()
  })
  const heading = html`<h2 id="smtp">Mail to reporters</h2>`
  // The form shows whole, once: with the stored settings and the way this admin confirms.
  const waiting = waitingFor(current, reauth)
  if (waiting) return html`<${PendingSection} id="smtp" title="Mail to reporters" load=${waiting} />`
  const field = (id, label, input, hint) => html`<div class="field"><label for=${id}>${label}</label>${input}${hint && html`<small id=${`${id}-hint`}>${hint}</small>`}</div>`
  return html`<section aria-labelledby="smtp">${heading}
    <p>${s
      ? html`Reporters who ask are told through <span class="mono break">${s.host}:${s.port}</span> when their report is fixed (changed <time datetime=${s.updatedAt}>${fmtDate(s.updatedAt)}</time>).`
      : 'Not set: the widget does not offer “Email me when this is fixed”. Set your SMTP server to tell reporters when their problem is fixed (docs/email.md).'}</p>
    <form class="grid" onSubmit=${(e) => (e.preventDefault(), save())}>
      <fieldset>
      <legend class="sr-only">SMTP server</legend>
      ${field('m-host', 'SMTP host', html`<input id="m-host" required maxlength="255" autocomplete="off" value=${form.host} onInput=${set('host')} placeholder="smtp.example.com" />`)}
      ${field('m-port', 'Port', html`<input id="m-port" type="number" required min="1" max="65535" value=${form.port} onInput=${set('port')} />`)}
      ${field('m-tls', 'Encryption', html`<select id="m-tls" value=${form.tls} onChange=${set('tls')}>${TLS.map(([v, label]) => html`<option value=${v}>${label}</option>`)}</select>`)}
      ${field('m-from', 'From', html`<input id="m-from" required maxlength="320" value=${form.from} onInput=${set('from')} placeholder="Shop <noreply@shop.example>" aria-describedby="m-from-hint" />`, 'The sender reporters see: noreply@example.com or “Shop <noreply@example.com>”.')}
      ${field('m-user', 'User', html`<input id="m-user" maxlength="255" autocomplete="off" value=${form.user} onInput=${set('user')} aria-describedby="m-user-hint" />`, 'Empty: no login (SMTP AUTH off).')}
      ${field(
        'm-password',
        'Password',
        html`<input id="m-password" type="password" autocomplete="new-password" maxlength="1024" required=${passwordNeeded} disabled=${form.removePassword} value=${form.password} onInput=${set('password')} aria-describedby="m-password-hint" />`,
        passwordNeeded
          ? 'The server changed: type the password again (the stored one is not sent to another server).'
          : s && s.passwordSet
            ? 'Stored encrypted, never shown. Empty keeps it.'
            : 'Stored encrypted, never shown again.',
      )}
      ${s && s.passwordSet && html`<div class="field check"><input id="m-nopass" type="checkbox" checked=${form.removePassword} onChange=${set('removePassword')} /><label for="m-nopass">Remove the stored password</label></div>`}
      ${retargets &&
      html`<p class="hint wide">Reporters’ mail goes through this server, also after you sign out: confirm it is you to save.${reauth.data && !reauth.data.hasPassword ? ' Confirm first, then fill in the form: what is typed here is not kept across the provider’s sign-in page.' : ''}</p>
        <${ConfirmIdentity} status=${reauth.data} purpose="smtp_change" id="m-confirm-password" label="Your fixloop password" passwordOnly=${true} password=${confirmPassword} setPassword=${setConfirmPassword} what="to save the mail settings" />`}
      <div class="actions wide"><button type="submit" class="primary" disabled=${busy || (retargets && !canConfirm(reauth.data, 'smtp_change'))}>${s ? 'Save mail settings' : 'Set mail settings'}</button>
        ${s && html`<button type="button" class="danger" onClick=${() => setDialog(true)}>Remove mail settings</button>`}
        ${saved && html`<span role="status">${saved}</span>`}</div>
      </fieldset>
    </form>
    <${ErrorBox} error=${error} />
    ${s &&
    html`<h3 id="smtp-test">Test the settings</h3>
      <form class="inline" aria-labelledby="smtp-test" onSubmit=${(e) => (e.preventDefault(), sendTest())}>
        <div class="field"><label for="m-test-to">Send a test mail to</label><input id="m-test-to" type="email" required maxlength="254" autocomplete="email" value=${testTo} onInput=${(e) => setTestTo(e.target.value)} /></div>
        <button type="submit" disabled=${testing}>Send test mail</button>
      </form>
      <div role="status">${testResult &&
        (testResult.sent
          ? html`<p class="notice">Test mail sent to <span class="mono">${testResult.to}</span>. Check that inbox.</p>`
          : html`<p class="error">Not sent to <span class="mono">${testResult.to}</span>: <span class="break">${testResult.error}</span></p>`)}</div>
      <${ErrorBox} error=${testError} />`}
    ${dialog &&
    html`<${Dialog} title="Remove the mail settings?" onClose=${() => setDialog(false)}>
      <p>Reporters are no longer told when their problem is fixed; mails not sent yet are dropped. The widget stops offering the mail.</p>
      <${ErrorBox} error=${removeError} />
      <div class="actions"><button type="button" class="danger" disabled=${removing} onClick=${remove}>Remove</button><button type="button" autofocus onClick=${() => setDialog(false)}>Cancel</button></div>
    </${Dialog}>`}
  </section>`
}
