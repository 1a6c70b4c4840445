// Confirming a sensitive action (reveal a signing secret, turn TOTP on or off): the password, or a fresh
// sign-in at the identity provider. "Confirm with <provider>" asks the server for the provider's URL
// (POST /admin/api/me/reauth, with the CSRF token like every mutation) and goes there as a top-level
// navigation; the provider sends the browser back to this very page, where the action is then done once,
// within 5 minutes, without a password (docs/security.md "Single sign-on").
import { useEffect, useRef } from 'preact/hooks'
import { api } from '@fixloop/api'
import { html, useAction, useLoad, ErrorBox } from '@fixloop/ui'

/** How this admin confirms (password, provider) and the session's unused confirmation: GET /admin/api/me/reauth. */
export function useReauth() {
  return useLoad(() => api('GET', '/admin/api/me/reauth'), [])
}

/** Whether the session holds an unused confirmation at the provider for `purpose`. */
export function confirmedFor(status, purpose) {
  const r = status && status.reauthenticated
  return !!r && r.purpose === purpose && new Date(r.expiresAt).getTime() > Date.now()
}

/** The request body's proof: nothing when the provider confirmed (the server uses that up), else the password. */
export const proofOf = (status, purpose, password) => (confirmedFor(status, purpose) ? {} : { password })

/**
 * Before a /v1 call the dashboard shares with sk_ keys and that outlives the session (a webhook endpoint,
 * SMTP, a tracker): its body has no password field, so the password is given first and recorded on the
 * session for that one call (POST /admin/api/me/reauth/password); nothing when the provider confirmed.
 */
export async function confirmFirst(status, purpose, password) {
  if (confirmedFor(status, purpose)) return
  await api('POST', '/admin/api/me/reauth/password', { body: { purpose, password } })
}

/** Whether the form can be sent: the admin has a password to type, or the provider confirmed. */
export const canConfirm = (status, purpose) => !!status && (status.hasPassword || confirmedFor(status, purpose))

/**
 * "Confirm with <provider>": asks the server for the provider's URL for `purpose` and goes there; the
 * provider sends the browser back to this page. `label` replaces the button's words.
 */
export function ProviderButton({ status, purpose, id, label }) {
  const [start, starting, startError] = useAction(async () => {
    const out = await api('POST', '/admin/api/me/reauth', { body: { purpose, returnTo: location.pathname + location.search } })
    location.assign(out.url)
  })
  const provider = status.provider
  return html`<div class="field">
    <button type="button" onClick=${start} disabled=${starting} aria-describedby=${`${id}-sso-hint`}>${label || `Confirm with ${provider}`}</button>
    <small id=${`${id}-sso-hint`}>Opens ${provider}'s sign-in page, then brings you back here to finish.</small>
    <${ErrorBox} error=${startError} /></div>`
}

/**
 * The password field and/or the "Confirm with <provider>" button; once the provider confirmed, a note
 * saying so instead. `id` is the password input's id; `autofocus` focuses the first control once shown.
 * `passwordOnly`: no provider button (a form whose state the round trip to the provider would lose).
 * `what`: the action, named on the provider button when the page has another one (another dialog's).
 * `label`: the password field's label, when the form has another password field (an SMTP server's).
 */
export function ConfirmIdentity({ status, purpose, id, password, setPassword, autofocus, passwordOnly, what, label = 'Password' }) {
  // The status may arrive after the dialog opened (and focused what it had): the first control takes the focus then.
  const box = useRef(null)
  const loaded = !!status
  useEffect(() => {
    const first = autofocus && box.current && box.current.querySelector('input, button:not([disabled])')
    if (first) first.focus()
  }, [loaded])
  if (!status) return html`<p>Loading…</p>`
  if (confirmedFor(status, purpose)) {
    // Without single sign-on the only way to have confirmed is the password (POST /admin/api/me/reauth/password).
    return html`<p class="confirmed" role="status">Confirmed with ${status.sso && status.provider ? status.provider : 'your password'}. Finish within 5 minutes: the confirmation is used once.</p>`
  }
  const provider = status.sso && status.provider && !(passwordOnly && status.hasPassword)
  return html`<div ref=${box}>
    ${status.hasPassword &&
    html`<div class="field"><label for=${id}>${label}</label>
      <input id=${id} type="password" autocomplete="current-password" required value=${password} onInput=${(e) => setPassword(e.target.value)} /></div>`}
    ${provider && status.hasPassword && html`<p class="or">or</p>`}
    ${provider && html`<${ProviderButton} status=${status} purpose=${purpose} id=${id} label=${what && `Confirm with ${status.provider} ${what}`} />`}
    ${!status.hasPassword && !status.sso && html`<p class="error" role="alert">This admin has no password and single sign-on is not configured: an operator sets a password with <code>fixloop admin reset-password</code>.</p>`}</div>`
}
