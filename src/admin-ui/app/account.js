// The signed-in admin: their sessions (revocable) and two-factor sign-in (TOTP).
import { useState } from 'preact/hooks'
import { api } from '@fixloop/api'
import { html, useAction, useLoad, ErrorBox, CopyField, fmtDate } from '@fixloop/ui'

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
  const [start, , startError] = useAction(async () => setSetup(await api('POST', '/admin/api/me/totp/secret')))
  const [enable, enabling, enableError] = useAction(async () => {
    await api('PUT', '/admin/api/me/totp', { body: { secret: setup.secret, code, password } })
    setSetup(null)
    setPassword('')
    await onChange()
  })
  const [disable, disabling, disableError] = useAction(async () => {
    await api('DELETE', '/admin/api/me/totp', { body: { password } })
    setPassword('')
    await onChange()
  })
  const pw = html`<div class="field"><label for="totp-password">Password</label><input id="totp-password" type="password" autocomplete="current-password" required value=${password} onInput=${(e) => setPassword(e.target.value)} /></div>`
  return html`<h1>Account</h1>
    <p>Signed in as <strong>${me.email}</strong>${me.isOwner ? ' (instance owner)' : ''}.</p>
    <section aria-labelledby="twofa"><h2 id="twofa">Two-factor sign-in</h2>
      ${me.totpEnabled
        ? html`<p>On: sign-in asks for a code from your authenticator app.</p>
          <form class="inline" onSubmit=${(e) => (e.preventDefault(), disable())}>${pw}<button type="submit" class="danger" disabled=${disabling}>Turn off</button></form>
          <${ErrorBox} error=${disableError} />`
        : setup
          ? html`<p>Add this secret to your authenticator app, then enter the code it shows.</p>
            <${CopyField} label="Secret" id="totp-secret" value=${setup.secret} />
            <${CopyField} label="otpauth URI" id="totp-uri" value=${setup.uri} />
            <form class="inline" onSubmit=${(e) => (e.preventDefault(), enable())}>
              <div class="field"><label for="totp-code">Code</label><input id="totp-code" inputmode="numeric" pattern="[0-9]{6}" required value=${code} onInput=${(e) => setCode(e.target.value)} /></div>
              ${pw}<button type="submit" class="primary" disabled=${enabling}>Turn on</button></form>
            <${ErrorBox} error=${enableError} />`
          : html`<p>Off.</p><button type="button" onClick=${start}>Set up an authenticator app</button><${ErrorBox} error=${startError} />`}
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
