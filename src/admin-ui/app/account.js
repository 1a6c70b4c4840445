// The signed-in admin: their sessions (revocable) and two-factor sign-in (TOTP).
import { useEffect, useState } from 'preact/hooks'
import { api } from '@fixloop/api'
import { html, useAction, useLoad, ErrorBox, CopyField, fmtDate } from '@fixloop/ui'
import { useReauth, confirmedFor, proofOf, canConfirm, ConfirmIdentity, ProviderButton } from '@fixloop/reauth'

/** "Chrome 120 on Linux" from a User-Agent header; the full header is in the cell's title. */
function browserName(ua) {
  const b = /(Edg|Firefox|HeadlessChrome|Chrome|Safari)\/(\d+)/.exec(ua)
  const os = /(Windows|Mac OS X|Android|iPhone|iPad|Linux)/.exec(ua)
  return b ? `${b[1] === 'Edg' ? 'Edge' : b[1]} ${b[2]}${os ? ` on ${os[1].replace('Mac OS X', 'macOS')}` : ''}` : ua.slice(0, 40) || '—'
}

export function AccountPage({ me, onChange }) {
  const sessions = useLoad(() => api('GET', '/admin/api/sessions'), [])
  const [revoke, , revokeError] = useAction(async (id) => {
    await api('DELETE', `/admin/api/sessions/${id}`)
    sessions.reload()
  })
  const [setup, setSetup] = useState(null)
  const [code, setCode] = useState('')
  const [password, setPassword] = useState('')
  const reauth = useReauth()
  const [start, , startError] = useAction(async () => setSetup(await api('POST', '/admin/api/me/totp/secret')))
  // Back from the identity provider to turn TOTP on: the set-up starts again (a secret shown before the
  // round trip was not kept), and the confirmation covers it.
  useEffect(() => {
    if (!me.totpEnabled && !setup && confirmedFor(reauth.data, 'totp_enable')) start()
  }, [reauth.data])
  const used = async () => reauth.reload() // a confirmation at the provider is used up by the attempt
  const [enable, enabling, enableError] = useAction(async () => {
    try {
      await api('PUT', '/admin/api/me/totp', { body: { secret: setup.secret, code, ...proofOf(reauth.data, 'totp_enable', password) } })
      setSetup(null)
      setPassword('')
      await onChange()
    } finally {
      await used()
    }
  })
  const [disable, disabling, disableError] = useAction(async () => {
    try {
      await api('DELETE', '/admin/api/me/totp', { body: proofOf(reauth.data, 'totp_disable', password) })
      setPassword('')
      await onChange()
    } finally {
      await used()
    }
  })
  // Turning on: the set-up's secret would not survive the round trip to the identity provider, so the
  // provider confirms before the set-up (the button below "Off"), the password within it.
  const confirm = (purpose) => html`<${ConfirmIdentity} status=${reauth.data} purpose=${purpose} id="totp-password" password=${password} setPassword=${setPassword} passwordOnly=${purpose === 'totp_enable'} />`
  const r = reauth.data
  const offActions = r && html`
    ${r.hasPassword && html`<button type="button" onClick=${start}>Set up an authenticator app</button>`}
    ${r.hasPassword && r.sso && html`<p class="or">or</p>`}
    ${r.sso && html`<${ProviderButton} status=${r} purpose="totp_enable" id="totp-sso" label=${`Confirm with ${r.provider}, then set up an authenticator app`} />`}
    ${!r.hasPassword && !r.sso && html`<p class="error" role="alert">This admin has no password and single sign-on is not configured: an operator sets a password with <code>fixloop admin reset-password</code>.</p>`}`
  return html`<h1>Account</h1>
    <p>Signed in as <strong>${me.email}</strong>${me.isOwner ? ' (instance owner)' : ''}.</p>
    <section aria-labelledby="twofa"><h2 id="twofa">Two-factor sign-in</h2>
      ${me.totpEnabled
        ? html`<p>On: sign-in asks for a code from your authenticator app.</p>
          <form class="inline" onSubmit=${(e) => (e.preventDefault(), disable())}>${confirm('totp_disable')}<button type="submit" class="danger" disabled=${disabling || !canConfirm(reauth.data, 'totp_disable')}>Turn off</button></form>
          <${ErrorBox} error=${disableError || reauth.error} />`
        : setup
          ? html`<p>Add this secret to your authenticator app, then enter the code it shows.</p>
            <${CopyField} label="Secret" id="totp-secret" value=${setup.secret} />
            <${CopyField} label="otpauth URI" id="totp-uri" value=${setup.uri} />
            <form class="inline" onSubmit=${(e) => (e.preventDefault(), enable())}>
              <div class="field"><label for="totp-code">Code</label><input id="totp-code" inputmode="numeric" pattern="[0-9]{6}" required value=${code} onInput=${(e) => setCode(e.target.value)} /></div>
              ${confirm('totp_enable')}<button type="submit" class="primary" disabled=${enabling || !canConfirm(reauth.data, 'totp_enable')}>Turn on</button></form>
            <${ErrorBox} error=${enableError || reauth.error} />`
          : html`<p>Off.</p>${offActions}<${ErrorBox} error=${startError || reauth.error} />`}
    </section>
    <section aria-labelledby="sessions"><h2 id="sessions">Sessions</h2>
      <${ErrorBox} error=${sessions.error || revokeError} />
      ${sessions.data &&
      html`<div class="table-wrap" tabindex="0" role="region" aria-label="Session table"><table>
        <thead><tr><th scope="col">Browser</th><th scope="col">Address</th><th scope="col">Signed in</th><th scope="col">Last seen</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
        <tbody>${sessions.data.data.map(
          (s) => html`<tr><td title=${s.userAgent}>${browserName(s.userAgent)}</td><td>${s.ip}</td><td>${fmtDate(s.createdAt)}</td><td>${fmtDate(s.lastSeenAt)}</td>
            <td>${s.current ? 'this session' : html`<button type="button" class="small" onClick=${() => revoke(s.id)}>Revoke</button>`}</td></tr>`,
        )}</tbody></table></div>`}
    </section>`
}
