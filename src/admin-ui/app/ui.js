// Small shared pieces: the html tag, navigation, dates, error text and a few accessible widgets.
import { h } from 'preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import htm from 'htm'

export const html = htm.bind(h)

const listeners = new Set()
export function navigate(path, replace = false) {
  if (replace) history.replaceState(null, '', path)
  else history.pushState(null, '', path)
  for (const l of listeners) l()
}
export function useLocation() {
  const [, force] = useState(0)
  useEffect(() => {
    const l = () => force((n) => n + 1)
    listeners.add(l)
    window.addEventListener('popstate', l)
    return () => {
      listeners.delete(l)
      window.removeEventListener('popstate', l)
    }
  }, [])
  return location.pathname + location.search
}

/** A same-page link: pushState instead of a full load; modified clicks keep browser behaviour. */
export function Link({ href, children, ...rest }) {
  const onClick = (e) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return
    e.preventDefault()
    navigate(href)
  }
  return html`<a href=${href} onClick=${onClick} ...${rest}>${children}</a>`
}

/**
 * A link target from a remote answer (a tracker issue's URL, a pull request's URL), or undefined when it
 * is not an absolute http(s) URL: the server stores only http(s) ones, and the page never renders a
 * `javascript:` or `data:` href even if one got stored by an older version.
 */
export function webHref(url) {
  if (typeof url !== 'string') return undefined
  try {
    const u = new URL(url)
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : undefined
  } catch {
    return undefined
  }
}

export const fmtDate = (iso) => (iso ? new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' }) : '—')
/**
 * An API error as a sentence: the message, then what the server said of it (`details.issues`, the first
 * three, or `details.reason`), then the code. The message alone ("The request body is not valid.") left the
 * admin guessing which field and why.
 */
export const errText = (e) => {
  if (!(e && e.code)) return String(e)
  const d = e.details || {}
  const said = Array.isArray(d.issues) ? d.issues.slice(0, 3).map((i) => String(i.message)).join('; ') + (d.issues.length > 3 ? `; and ${d.issues.length - 3} more` : '') : typeof d.reason === 'string' ? d.reason : ''
  return `${e.message}${said ? ` ${said}.` : ''} (${e.code})`
}

export function ErrorBox({ error }) {
  if (!error) return null
  return html`<p class="error" role="alert">${errText(error)}</p>`
}

/** Runs an async action, exposing busy and error state for the form that started it. */
export function useAction(fn) {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState(null)
  const run = async (...args) => {
    setBusy(true)
    setError(null)
    try {
      return await fn(...args)
    } catch (e) {
      setError(e)
      return undefined
    } finally {
      setBusy(false)
    }
  }
  return [run, busy, error, setError]
}

/** Loads data for a view; reload() fetches again. */
export function useLoad(fn, deps) {
  const [state, setState] = useState({ data: null, error: null, loading: true })
  const [n, setN] = useState(0)
  useEffect(() => {
    let live = true
    setState((s) => ({ ...s, loading: true }))
    fn().then(
      (data) => live && setState({ data, error: null, loading: false }),
      (error) => live && setState({ data: null, error, loading: false }),
    )
    return () => {
      live = false
    }
  }, [...deps, n])
  return { ...state, reload: () => setN((x) => x + 1) }
}

/** The first of `loads` (useLoad's states) whose data is not in yet: still loading, or failed; else undefined. */
export const waitingFor = (...loads) => loads.find((l) => !l.data && (l.loading || l.error))

/**
 * A page section (`id`, `title`) whose data is not in yet (`load`, from waitingFor): "Loading…" (aria-busy)
 * while it loads, the error with a Retry button when it failed. The heading keeps the section's place and
 * the box keeps one height either way; no form is shown before its stored values (one drawn with the
 * defaults could be saved over them), and nothing moves under a pointer elsewhere while it waits.
 */
export function PendingSection({ id, title, load }) {
  return html`<section aria-labelledby=${id} aria-busy=${load.loading ? 'true' : undefined}><h2 id=${id}>${title}</h2>
    <div class="pending">${load.loading
      ? html`<p class="muted" role="status">Loading…</p>`
      : html`<${ErrorBox} error=${load.error} /><button type="button" onClick=${load.reload}>Retry</button>`}</div></section>`
}

/** A modal dialog (native <dialog>): focus moves in, Escape closes, focus returns where it was. */
export function Dialog({ title, onClose, children }) {
  const ref = useRef(null)
  useEffect(() => {
    const d = ref.current
    const before = document.activeElement
    d.showModal()
    return () => {
      if (before && before.focus) before.focus()
    }
  }, [])
  return html`<dialog ref=${ref} aria-labelledby="dialog-title" onClose=${onClose} onCancel=${onClose}>
    <h2 id="dialog-title">${title}</h2>
    ${children}
  </dialog>`
}

export function CopyField({ label, value, id, multiline }) {
  const [copied, setCopied] = useState(false)
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value)
      setCopied(true)
    } catch {
      document.getElementById(id).select()
    }
  }
  return html`<div class="field">
    <label for=${id}>${label}</label>
    <div class="copy">
      ${multiline
        ? html`<textarea id=${id} readonly rows="4" class="mono">${value}</textarea>`
        : html`<input id=${id} readonly value=${value} class="mono" />`}
      <button type="button" onClick=${copy}>${copied ? 'Copied' : 'Copy'}</button>
    </div>
  </div>`
}

/**
 * Keeps keyboard focus on the page when the control that had it goes away under it. An action's button is
 * disabled while the action runs (Chrome then drops focus to <body>) and is often gone after it (Unmerge,
 * Revoke, Done): a keyboard or screen-reader user was left at the top of the document after nearly every
 * action. Here: a control disabled while focused gets focus back once it is enabled again; one removed
 * gets the page's heading instead (the main region when there is none). Only when focus really fell to
 * <body>: a click elsewhere, or another window, is left alone.
 */

/** How long a disabled control is waited for (an action's round trip). */
const WAIT_ENABLED_MS = 15_000
const POLL_MS = 50

function fallbackTarget() {
  const heading = document.querySelector('main h1')
  if (heading) {
    if (!heading.hasAttribute('tabindex')) heading.setAttribute('tabindex', '-1')
    return heading
  }
  return document.getElementById('main')
}

const fellToBody = () => document.activeElement === null || document.activeElement === document.body

function rescue(lost, since) {
  if (!fellToBody() || !document.hasFocus()) return
  if (lost.isConnected && !lost.disabled) {
    lost.focus()
    return
  }
  if (lost.isConnected && Date.now() - since < WAIT_ENABLED_MS) {
    setTimeout(() => rescue(lost, since), POLL_MS)
    return
  }
  fallbackTarget()?.focus()
}

export function keepFocus() {
  document.addEventListener('focusout', (e) => {
    if (e.relatedTarget) return
    const lost = e.target
    if (!(lost instanceof HTMLElement)) return
    // After the render that follows: disabled (busy) or removed (the action's result) by then, or neither
    // (focus moved to nothing on purpose: a click on the page's background), which is left as it is.
    setTimeout(() => {
      if (lost.isConnected && !lost.disabled) return
      rescue(lost, Date.now())
    }, 0)
  })
}
