// Sign-in and first-run setup forms. The setup token comes from the URL fragment (#token=…), which
// never reaches the server's or a proxy's logs.
import { useState } from 'preact/hooks'
import { api, setCsrf } from '@fixloop/api'
import { html, useAction, useLoad, ErrorBox } from '@fixloop/ui'

// "Sign in with SSO" is a plain top-level navigation to /admin/oidc/start (which redirects to the identity
// provider): not a form submission, because the page's CSP (form-action 'self') would block the redirect.
function SsoButton() {
  return html`<button type="button" class="primary wide" onClick=${() => location.assign('/admin/oidc/start')}>Sign in with SSO</button>`
}

export function SignIn({ onDone }) {
  // Without an answer the form is shown, as before single sign-on existed.
  const methods = useLoad(() => api('GET', '/admin/api/sign-in-methods').catch(() => ({ password: true, sso: false })), [])
  if (methods.loading) return html`<main id="main" class="narrow"><h1>Sign in to fixloop</h1><p>Loading…</p></main>`
  const { password, sso } = methods.data
  if (!password) {
    return html`<main id="main" class="narrow">
    <h1>Sign in to fixloop</h1>
    <p>This server signs you in through your organisation's identity provider.</p>
    <${SsoButton} />
    <p class="hint">No account? An operator creates one with <code>fixloop admin create --no-password</code>.</p>
  </main>`
  }
  return html`<${PasswordSignIn} onDone=${onDone} sso=${sso} />`
}

function PasswordSignIn({ onDone, sso }) {
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [totp, setTotp] = useState('')
  const [needTotp, setNeedTotp] = useState(false)
  const [run, busy, error] = useAction(async () => {
    try {
      const me = await api('POST', '/admin/api/session', { body: { email, password, ...(needTotp ? { totp } : {}) } })
      setCsrf(me.csrfToken)
      onDone()
    } catch (e) {
      if (e.details && e.details.totpRequired) setNeedTotp(true)
      throw e
    }
  })
  return html`<main id="main" class="narrow">
    <h1>Sign in to fixloop</h1>
    <form onSubmit=${(e) => (e.preventDefault(), run())}>
      <div class="field"><label for="email">Email</label>
        <input id="email" type="email" autocomplete="username" required value=${email} onInput=${(e) => setEmail(e.target.value)} /></div>
      <div class="field"><label for="password">Password</label>
        <input id="password" type="password" autocomplete="current-password" required value=${password} onInput=${(e) => setPassword(e.target.value)} /></div>
      ${needTotp &&
      html`<div class="field"><label for="totp">One-time code</label>
        <input id="totp" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" required value=${totp} onInput=${(e) => setTotp(e.target.value)} /></div>`}
      <${ErrorBox} error=${error} />
      <button type="submit" class=${sso ? 'wide' : 'primary'} disabled=${busy}>Sign in</button>
    </form>
    ${sso && html`<p class="or">or</p><${SsoButton} />`}
    <p class="hint">No account? An operator creates one with <code>fixloop admin create</code>.</p>
  </main>`
}

export function Setup({ onDone }) {
  // Without an answer the form is shown: the submission says what is wrong then.
  const methods = useLoad(() => api('GET', '/admin/api/sign-in-methods').catch(() => ({ setupOpen: true })), [])
  if (methods.loading) return html`<main id="main" class="narrow"><h1>Set up fixloop</h1><p>Loading…</p></main>`
  if (methods.data.setupOpen === false) {
    return html`<main id="main" class="narrow">
    <h1>Set up fixloop</h1>
    <p role="status">This fixloop already has an admin, so its setup link no longer creates one.</p>
    <p><a href="/admin">Sign in</a>, or ask an admin to create your account (<code>fixloop admin create</code>).</p>
  </main>`
  }
  return html`<${SetupForm} onDone=${onDone} />`
}

function SetupForm({ onDone }) {
  const token = new URLSearchParams(location.hash.slice(1)).get('token') || ''
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [show, setShow] = useState(false)
  const [run, busy, error] = useAction(async () => {
    const me = await api('POST', '/admin/api/setup', { body: { token, email, password } })
    setCsrf(me.csrfToken)
    history.replaceState(null, '', '/admin')
    onDone()
  })
  return html`<main id="main" class="narrow">
    <h1>Set up fixloop</h1>
    <p>Create the first admin. This account owns the instance and sees every Org.</p>
    ${!token && html`<p class="error" role="alert">This page needs the setup link printed by <code>fixloop serve</code>.</p>`}
    <form onSubmit=${(e) => (e.preventDefault(), run())}>
      <div class="field"><label for="email">Email</label>
        <input id="email" type="email" autocomplete="username" required value=${email} onInput=${(e) => setEmail(e.target.value)} /></div>
      <div class="field"><label for="password">Password</label>
        <input id="password" type=${show ? 'text' : 'password'} autocomplete="new-password" minlength="10" required aria-describedby="pw-hint" value=${password} onInput=${(e) => setPassword(e.target.value)} />
        <small id="pw-hint">At least 10 characters. Store it in your password manager.</small></div>
      <div class="field check"><input id="show" type="checkbox" checked=${show} onChange=${(e) => setShow(e.target.checked)} /><label for="show">Show what I type</label></div>
      <${ErrorBox} error=${error} />
      <button type="submit" class="primary" disabled=${busy || !token}>Create admin</button>
    </form>
  </main>`
}
