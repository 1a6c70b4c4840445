// Entry: who is signed in, which page the path names, and the frame around it.
import { render } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { api, setCsrf } from '@fixloop/api'
import { html, Link, navigate, useLocation, ErrorBox, keepFocus } from '@fixloop/ui'
import { SignIn, Setup } from '@fixloop/auth'
import { AppsPage, AppPage, OrgsPage } from '@fixloop/apps'
import { KeysPage, AuditPage } from '@fixloop/keys'
import { ReportersPage } from '@fixloop/reporters'
import { InboxPage } from '@fixloop/inbox'
import { ReportPage } from '@fixloop/report'
import { AccountPage } from '@fixloop/account'
import { WebhooksPage } from '@fixloop/webhooks'

const ORG_PAGES = [
  [/^inbox$/, (org) => html`<${InboxPage} org=${org} />`],
  [/^r\/([0-9a-f]{24})$/, (org, m) => html`<${ReportPage} org=${org} id=${m[1]} />`],
  [/^apps$/, (org) => html`<${AppsPage} org=${org} />`],
  [/^apps\/([0-9a-f]{24})$/, (org, m, me) => html`<${AppPage} org=${org} appId=${m[1]} me=${me} />`],
  [/^keys$/, (org) => html`<${KeysPage} org=${org} />`],
  [/^audit$/, (org) => html`<${AuditPage} org=${org} />`],
  [/^reporters$/, (org) => html`<${ReportersPage} org=${org} />`],
  [/^webhooks$/, (org) => html`<${WebhooksPage} org=${org} />`],
]

function NotFound() {
  return html`<h1>404 Not found</h1><p>This page does not exist, or it belongs to an Org you are not a member of.</p><p><${Link} href="/admin">Back to the dashboard</${Link}></p>`
}

function Frame({ me, orgs, orgId, children, onSignOut }) {
  const org = orgs.find((o) => o.id === orgId)
  const here = location.pathname
  const nav = (href, label) => html`<li><${Link} href=${href} aria-current=${here.startsWith(href) ? 'page' : undefined}>${label}</${Link}></li>`
  return html`
    <a class="skip" href="#main">Skip to content</a>
    <header class="top">
      <${Link} href="/admin" class="brand">fixloop</${Link}>
      ${orgs.length > 0 &&
      html`<label class="org-pick"><span class="sr-only">Org</span>
        <select aria-label="Org" value=${orgId || ''} onChange=${(e) => navigate(`/admin/o/${e.target.value}/inbox`)}>
          ${!org && html`<option value="">Choose an Org</option>`}
          ${orgs.map((o) => html`<option value=${o.id}>${o.name}</option>`)}
        </select></label>`}
      <nav aria-label="Main">
        <ul>
          ${org && nav(`/admin/o/${org.id}/inbox`, 'Inbox')}
          ${org && nav(`/admin/o/${org.id}/apps`, 'Apps')}
          ${org && org.role === 'owner' && nav(`/admin/o/${org.id}/keys`, 'API keys')}
          ${org && org.role === 'owner' && nav(`/admin/o/${org.id}/webhooks`, 'Webhooks')}
          ${org && org.role === 'owner' && nav(`/admin/o/${org.id}/audit`, 'Audit log')}
          ${org && org.role === 'owner' && nav(`/admin/o/${org.id}/reporters`, 'Reporters')}
          ${nav('/admin/orgs', 'Orgs')}
          ${nav('/admin/account', 'Account')}
        </ul>
      </nav>
      <button type="button" class="link" onClick=${onSignOut}>Sign out <span class="sr-only">${me.email}</span></button>
    </header>
    <main id="main" tabindex="-1">${children}</main>`
}

function App() {
  const path = useLocation()
  const [state, setState] = useState({ loading: true, me: null, orgs: [], error: null })
  const load = async () => {
    try {
      const me = await api('GET', '/admin/api/session')
      setCsrf(me.csrfToken)
      const orgs = (await api('GET', '/admin/api/orgs')).data
      setState({ loading: false, me, orgs, error: null })
    } catch (e) {
      // 401 shows the sign-in form; two session cookies (details.ambiguousCookie) need the user to act.
      setState({ loading: false, me: null, orgs: [], error: e.status === 401 && !(e.details && e.details.ambiguousCookie) ? null : e })
    }
  }
  useEffect(() => {
    load()
  }, [])
  useEffect(() => {
    const main = document.getElementById('main')
    if (main && document.activeElement === document.body) main.focus({ preventScroll: true })
  }, [path])

  if (state.loading) return html`<main id="main"><p aria-live="polite">Loading…</p></main>`
  if (state.error) return html`<main id="main"><h1>fixloop</h1><${ErrorBox} error=${state.error} /></main>`
  if (!state.me) {
    // After setup, the root page sends the new owner to the first Org's inbox (or to Orgs when none exists).
    if (location.pathname === '/admin/setup') return html`<${Setup} onDone=${() => { setState((st) => ({ ...st, loading: true })); navigate('/admin', true); load() }} />`
    return html`<${SignIn} onDone=${load} />`
  }
  const { me, orgs } = state
  const rest = location.pathname.replace(/^\/admin\/?/, '')
  let page = null
  // Pages outside an Org (Orgs, Account) keep the Org last worked in, so its menu stays.
  let orgId = sessionStorage.getItem('fixloop.org')
  // None worked in yet (a fresh session): the first Org, so the menu names a real one, not "Choose an Org".
  if (!orgs.some((o) => o.id === orgId)) orgId = orgs.length ? orgs[0].id : null
  const m = /^o\/([0-9a-f]{24})\/(.*)$/.exec(rest)
  if (m) {
    orgId = m[1]
    if (orgs.some((o) => o.id === orgId)) sessionStorage.setItem('fixloop.org', orgId)
    const org = orgs.find((o) => o.id === orgId)
    for (const [re, view] of ORG_PAGES) {
      const mm = re.exec(m[2])
      if (mm && org) page = view(org, mm, me)
    }
  } else if (rest === '' || rest === 'setup') {
    const first = orgs.find((o) => o.id === orgId) || orgs[0]
    queueMicrotask(() => navigate(first ? `/admin/o/${first.id}/inbox` : '/admin/orgs', true))
  } else if (rest === 'orgs') {
    page = html`<${OrgsPage} me=${me} orgs=${orgs} onChange=${load} />`
  } else if (rest === 'account') {
    page = html`<${AccountPage} me=${me} onChange=${load} />`
  }
  const signOut = async () => {
    const out = await api('DELETE', '/admin/api/session').catch(() => null)
    setState({ loading: false, me: null, orgs: [], error: null })
    // A single sign-on session ends at the identity provider too: the server answers its logout URL, and
    // the provider sends the browser back to the sign-in page (/admin). Replaced, so Back does not return here.
    const provider = out && typeof out.endSessionUrl === 'string' ? out.endSessionUrl : ''
    if (/^https?:\/\//.test(provider)) return void location.replace(provider)
    navigate('/admin', true)
  }
  return html`<${Frame} me=${me} orgs=${orgs} orgId=${orgId} onSignOut=${signOut}>${page || (rest === '' || rest === 'setup' ? null : html`<${NotFound} />`)}</${Frame}>`
}

keepFocus()
render(html`<${App} />`, document.getElementById('root'))
