// The triage inbox: status folders, filters, newest first with cursor paging, unread marks, bulk moves
// that show each row's own answer, and the keyboard: j/k move, x select, o open, q queue, e archive,
// y/n confirm or reject the current report's suggested duplicate, s spam / not spam, ? help.
// The Spam folder lists what the spam score filed away (score and reasons on each row).
// It stays current through the Org's event stream: new reports slide in at the top (announced politely,
// focus stays where it is) and status changes show on their rows.
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks'
import { api, qs } from '@fixloop/api'
import { html, Link, navigate, useLoad, ErrorBox, Dialog, fmtDate } from '@fixloop/ui'
import { canCustomerMove } from '@fixloop/fsm'
import { ItemStatus, statusLabel, MODE_LABELS } from '@fixloop/labels'
import { watchEvents } from '@fixloop/live'

/** A row's spam reasons as words: "honeypot filled, no proof of work". */
const reasonText = (spam) => (spam.reasons && spam.reasons.length ? spam.reasons.map((r) => String(r).replace(/_/g, ' ')).join(', ') : 'no reason recorded')

export const FOLDERS = [
  ['inbox', 'Inbox'],
  ['awaiting_manual', 'Awaiting decision'],
  ['queued', 'Queued'],
  ['running', 'Running'],
  ['pr_opened', 'PR opened'],
  ['resolved', 'Resolved'],
  ['failed', 'Failed'],
  ['archived', 'Archived'],
  ['spam', 'Spam'],
  ['all', 'All'],
]
const FILTERS = ['appId', 'severity', 'mode', 'hasScreenshot', 'hasConsole', 'urlContains', 'from', 'to', 'q']
export const SHORTCUTS = [
  ['j / k', 'next / previous report'],
  ['x', 'select or unselect the current report'],
  ['o or Enter', 'open the current report'],
  ['q', 'queue the selected reports (or the current one) for the agent'],
  ['e', 'archive the selected reports (or the current one)'],
  ['y', 'confirm the current report’s suggested duplicate (merge it into the suggested report)'],
  ['n', 'reject the current report’s suggested duplicate'],
  ['s', 'mark the selected reports (or the current one) as spam; in the Spam folder: not spam'],
  ['?', 'show this list'],
]

/** The events that can change what an inbox list shows. */
const LIVE_TYPES = ['feedback.received', 'feedback.status_changed', 'feedback.duplicate_attached', 'feedback.duplicate_suggested', 'feedback.unmerged']
const VERB = { queued: ['queue', 'Queued'], archived: ['archive', 'Archived'] }

/**
 * The rows after a fresh first page arrived: reports not yet listed join in id order (newest first),
 * rows already listed take their fresh fields. Returns the rows and how many joined.
 */
export function mergeFresh(rows, fresh) {
  const byId = new Map(fresh.map((r) => [r.id, r]))
  const known = new Set(rows.map((r) => r.id))
  // Only what sorts above the oldest loaded row: older reports belong to "Older reports".
  const floor = rows.length ? rows[rows.length - 1].id : ''
  const added = fresh.filter((r) => !known.has(r.id) && r.id > floor)
  const merged = rows.map((r) => (byId.has(r.id) ? { ...r, ...byId.get(r.id) } : r)).concat(added)
  merged.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
  return { rows: merged, added: added.length }
}

const typing = (e) => e.target.closest && e.target.closest('input, textarea, select, dialog')

function Filters({ org, apps, params, onApply }) {
  const [f, setF] = useState(params)
  useEffect(() => setF(params), [JSON.stringify(params)])
  const set = (k) => (e) => setF({ ...f, [k]: e.target.value })
  const field = (id, label, input) => html`<div class="field"><label for=${id}>${label}</label>${input}</div>`
  return html`<form class="filters" aria-label="Filters" onSubmit=${(e) => (e.preventDefault(), onApply(f))}>
    ${field('f-q', 'Text contains', html`<input id="f-q" type="search" value=${f.q || ''} onInput=${set('q')} />`)}
    ${field('f-app', 'App', html`<select id="f-app" value=${f.appId || ''} onChange=${set('appId')}><option value="">Any</option>${apps.map((a) => html`<option value=${a.id}>${a.name}</option>`)}</select>`)}
    ${field('f-sev', 'Severity', html`<select id="f-sev" value=${f.severity || ''} onChange=${set('severity')}><option value="">Any</option><option>low</option><option>medium</option><option>high</option></select>`)}
    ${field('f-mode', 'Submitter', html`<select id="f-mode" value=${f.mode || ''} onChange=${set('mode')}><option value="">Any</option><option value="public">${MODE_LABELS.public}</option><option value="private">${MODE_LABELS.private}</option></select>`)}
    ${field('f-shot', 'Screenshot', html`<select id="f-shot" value=${f.hasScreenshot || ''} onChange=${set('hasScreenshot')}><option value="">Any</option><option value="true">with</option><option value="false">without</option></select>`)}
    ${field('f-console', 'Console log', html`<select id="f-console" value=${f.hasConsole || ''} onChange=${set('hasConsole')}><option value="">Any</option><option value="true">with</option><option value="false">without</option></select>`)}
    ${field('f-url', 'URL contains', html`<input id="f-url" value=${f.urlContains || ''} onInput=${set('urlContains')} />`)}
    ${field('f-from', 'From', html`<input id="f-from" type="date" value=${f.from || ''} onInput=${set('from')} />`)}
    ${field('f-to', 'To', html`<input id="f-to" type="date" value=${f.to || ''} onInput=${set('to')} />`)}
    <div class="actions"><button type="submit">Apply filters</button><button type="button" onClick=${() => onApply({})}>Clear</button></div>
  </form>`
}

export function InboxPage({ org }) {
  const params = Object.fromEntries(new URLSearchParams(location.search))
  const folder = params.folder || 'inbox'
  const filters = Object.fromEntries(FILTERS.filter((k) => params[k]).map((k) => [k, params[k]]))
  const key = org.id + location.search
  const apps = useLoad(() => api('GET', `/admin/api/orgs/${org.id}/apps`), [org.id])
  const counts = useLoad(() => api('GET', `/admin/api/orgs/${org.id}/inbox/counts`), [key])
  const [pages, setPages] = useState({ rows: [], next: null, error: null, loading: true })
  const [cur, setCurState] = useState(0)
  // Keys can arrive faster than renders: the handler reads the current row from a ref, not a stale closure.
  const curRef = useRef(0)
  const setCur = (i) => {
    curRef.current = i
    setCurState(i)
  }
  const [checked, setCheckedState] = useState(new Set())
  const checkedRef = useRef(checked)
  const setChecked = (next) => {
    checkedRef.current = next
    setCheckedState(next)
  }
  const [results, setResults] = useState({})
  const [summary, setSummary] = useState('')
  const [liveNote, setLiveNote] = useState('')
  const [liveState, setLiveState] = useState('')
  const [help, setHelp] = useState(false)
  const listRef = useRef(null)
  const selectAllRef = useRef(null)
  // The rows as the latest render saw them, for the stream's callbacks (they outlive a render).
  const rowsRef = useRef([])
  rowsRef.current = pages.rows

  const fetchPage = async (cursor) => {
    const page = await api('GET', `/admin/api/orgs/${org.id}/inbox${qs({ folder, ...filters, cursor, limit: 50 })}`)
    return page
  }
  const [liveFrom, setLiveFrom] = useState(null)
  const liveCount = useRef(0)
  useEffect(() => {
    setPages({ rows: [], next: null, error: null, loading: true })
    setCur(0)
    setChecked(new Set())
    setResults({})
    setLiveNote('')
    liveCount.current = 0
    setLiveFrom(null)
    fetchPage().then(
      (p) => {
        setPages({ rows: p.data, next: p.nextCursor, error: null, loading: false })
        setLiveFrom(typeof p.eventSeq === 'number' ? p.eventSeq : null)
      },
      (e) => setPages({ rows: [], next: null, error: e, loading: false }),
    )
  }, [key])

  /** Puts fresh rows in; the current row stays current (by id), and focus stays on its element. */
  const applyRows = (nextRows) => {
    const curId = rowsRef.current[curRef.current] && rowsRef.current[curRef.current].id
    const i = curId ? nextRows.findIndex((r) => r.id === curId) : -1
    if (i >= 0 && i !== curRef.current) setCur(i)
    rowsRef.current = nextRows
    setPages((p) => ({ ...p, rows: nextRows }))
  }

  // Live: the stream starts after the seq the first page was read at; a burst of events costs one read.
  useEffect(() => {
    if (liveFrom === null) return undefined
    let timer = null
    let stale = false
    const refresh = async () => {
      timer = null
      stale = false
      try {
        const fresh = await fetchPage()
        const { rows, added } = mergeFresh(rowsRef.current, fresh.data)
        applyRows(rows)
        // Cumulative, so each arrival changes the text and is announced again.
        if (added) {
          liveCount.current += added
          const n = liveCount.current
          setLiveNote(`${n} new report${n === 1 ? '' : 's'} since this list loaded, newest at the top.`)
        }
        counts.reload()
      } catch {
        // The next event tries again.
      }
    }
    const stop = watchEvents({
      org: org.id,
      after: liveFrom,
      types: LIVE_TYPES,
      onState: setLiveState,
      onEvents: (events) => {
        const known = new Map(rowsRef.current.map((r) => [r.id, r]))
        let rows = null
        for (const e of events) {
          const id = e.data && e.data.feedbackId
          if (e.type === 'feedback.status_changed' && known.has(id)) {
            rows = rows || rowsRef.current.slice()
            const at = rows.findIndex((r) => r.id === id)
            // A move to pr_opened does not say whether a request was opened: unknown (not "branch pushed") until the row is read again.
            rows[at] = { ...rows[at], status: e.data.to, ...(e.data.to === 'pr_opened' ? { mergeRequestUrl: undefined } : {}) }
          } else stale = true
        }
        if (rows) applyRows(rows)
        if (stale && !timer) timer = setTimeout(refresh, 200)
        else if (!stale) counts.reload()
      },
    })
    return () => {
      stop()
      if (timer) clearTimeout(timer)
    }
  }, [key, liveFrom])

  const more = async () => {
    const p = await fetchPage(pages.next)
    // Functional: rows the live stream added meanwhile stay; a row already listed is not listed twice.
    setPages((cur) => {
      const known = new Set(cur.rows.map((r) => r.id))
      const rows = [...cur.rows, ...p.data.filter((r) => !known.has(r.id))]
      rowsRef.current = rows
      return { ...cur, rows, next: p.nextCursor }
    })
  }

  const go = (change) => navigate(`/admin/o/${org.id}/inbox${qs({ ...filters, folder, ...change })}`)
  // On a phone the folders are one row that scrolls sideways: keep the open one in view.
  const foldersRef = useRef(null)
  useLayoutEffect(() => {
    const open = foldersRef.current && foldersRef.current.querySelector('[aria-current="page"]')
    const row = open && open.closest('ul')
    if (row && row.scrollWidth > row.clientWidth) row.scrollLeft = Math.max(0, open.offsetLeft - row.offsetLeft - 8)
  }, [folder])
  const targets = () => {
    const sel = checkedRef.current
    if (sel.size) return rowsRef.current.filter((r) => sel.has(r.id))
    return rowsRef.current[curRef.current] ? [rowsRef.current[curRef.current]] : []
  }

  /**
   * Moves each target through PATCH /v1/feedback/:id and shows each row's own answer. A row the FSM
   * (src/core/fsm.ts, the module the API uses) does not let move there is not sent: its row says why.
   */
  const move = async (status) => {
    const rows = targets()
    if (!rows.length) return
    const [verb, done] = VERB[status]
    const out = { ...results }
    let ok = 0
    for (const r of rows) {
      if (!canCustomerMove(r.status, status)) {
        const why = r.status === status ? `already ${statusLabel(r.status).toLowerCase()}` : `a report that is ${statusLabel(r.status).toLowerCase()} cannot be ${done.toLowerCase()}`
        out[r.id] = { ok: false, text: `Not ${done.toLowerCase()}: ${why}` }
        continue
      }
      try {
        await api('PATCH', `/v1/feedback/${r.id}`, { org: org.id, body: { status } })
        out[r.id] = { ok: true, text: done }
        ok++
      } catch (e) {
        out[r.id] = { ok: false, text: `Not ${done.toLowerCase()}: ${e.message || e.code}` }
      }
    }
    setResults(out)
    applyRows(rowsRef.current.map((r) => (out[r.id] && out[r.id].ok ? { ...r, status } : r)))
    setSummary(`${done} ${ok} of ${rows.length}.${ok < rows.length ? ` See each row for why the others were not ${verb === 'queue' ? 'queued' : 'archived'}.` : ''}`)
    setChecked(new Set())
  }
  /**
   * Marks the targets as spam, or (in the Spam folder) as not spam, through PATCH /v1/feedback/:id
   * {"spam": …}; each row says what happened. A row that changed leaves this folder's meaning, so the
   * counts are read again.
   */
  const setSpam = async (spam) => {
    const rows = targets()
    if (!rows.length) return
    const done = spam ? 'Marked as spam' : 'Not spam'
    const out = { ...results }
    let ok = 0
    for (const r of rows) {
      try {
        const item = await api('PATCH', `/v1/feedback/${r.id}`, { org: org.id, body: { spam } })
        out[r.id] = { ok: true, text: done, spam: item && 'spam' in item ? item.spam : spam ? r.spam : null }
        ok++
      } catch (e) {
        out[r.id] = { ok: false, text: `Not changed: ${e.message || e.code}` }
      }
    }
    setResults(out)
    applyRows(rowsRef.current.map((r) => (out[r.id] && out[r.id].ok ? { ...r, spam: out[r.id].spam } : r)))
    setSummary(`${done}: ${ok} of ${rows.length}.`)
    setChecked(new Set())
    counts.reload()
  }
  /**
   * Confirms (merge into the suggested lead: the row leaves the list, its lead takes it) or rejects the
   * current row's suggestion; the row says what happened, or why nothing did.
   */
  const decide = async (confirm) => {
    const r = rowsRef.current[curRef.current]
    if (!r) return
    const out = { ...results }
    const s = r.suggestedDuplicateOf
    if (!s) {
      out[r.id] = { ok: false, text: 'No suggested duplicate' }
      setResults(out)
      setSummary('The current report has no suggested duplicate.')
      return
    }
    try {
      if (confirm) {
        await api('POST', `/v1/feedback/${r.id}/merge`, { org: org.id, body: { leadId: s.id } })
        const rows = rowsRef.current.filter((x) => x.id !== r.id)
        applyRows(rows)
        const next = Math.min(curRef.current, Math.max(0, rows.length - 1))
        setCur(next)
        // The row that had focus is gone: focus moves to the row now current, once it is drawn.
        setTimeout(() => {
          const el = listRef.current && listRef.current.querySelector(`[data-index="${next}"]`)
          if (el) el.focus()
        }, 0)
        setSummary('Merged into the suggested report.')
        counts.reload()
        return
      }
      await api('POST', `/v1/feedback/${r.id}/reject-suggestion`, { org: org.id })
      out[r.id] = { ok: true, text: 'Suggestion rejected' }
      applyRows(rowsRef.current.map((x) => (x.id === r.id ? { ...x, suggestedDuplicateOf: null } : x)))
      setSummary('Suggestion rejected: it will not be suggested again for this report.')
    } catch (e) {
      out[r.id] = { ok: false, text: `Not ${confirm ? 'merged' : 'rejected'}: ${e.message || e.code}` }
      setSummary(out[r.id].text)
    }
    setResults(out)
  }
  const open = (r) => r && navigate(`/admin/o/${org.id}/r/${r.id}`)
  const toggle = (id) => {
    const next = new Set(checkedRef.current)
    next.has(id) ? next.delete(id) : next.add(id)
    setChecked(next)
  }
  const allChecked = pages.rows.length > 0 && pages.rows.every((r) => checked.has(r.id))
  const someChecked = !allChecked && pages.rows.some((r) => checked.has(r.id))
  const toggleAll = () => setChecked(allChecked ? new Set() : new Set(pages.rows.map((r) => r.id)))
  // "Mixed" is a DOM property only: it is set after each render, in the same task (a layout effect): a
  // plain effect waits for the next frame, so the box briefly said "unchecked" to assistive technology.
  useLayoutEffect(() => {
    if (selectAllRef.current) selectAllRef.current.indeterminate = someChecked
  })
  const selected = pages.rows.filter((r) => checked.has(r.id))
  const canMoveSelected = (to) => selected.some((r) => canCustomerMove(r.status, to))

  useEffect(() => {
    const onKey = (e) => {
      if (e.defaultPrevented || e.metaKey || e.ctrlKey || e.altKey || typing(e)) return
      const rows = pages.rows
      const cur = curRef.current
      const focusRow = (i) => {
        setCur(i)
        const el = listRef.current && listRef.current.querySelector(`[data-index="${i}"]`)
        if (el) el.focus()
      }
      if (e.key === 'j') focusRow(Math.min(rows.length - 1, cur + 1))
      else if (e.key === 'k') focusRow(Math.max(0, cur - 1))
      else if (e.key === 'x' && rows[cur]) toggle(rows[cur].id)
      else if ((e.key === 'o' || (e.key === 'Enter' && e.target.dataset && e.target.dataset.index)) && rows[cur]) open(rows[cur])
      else if (e.key === 'q' && folder === 'spam') setSummary('Spam is not queued for the agent: say “Not spam” (s) first.')
      else if (e.key === 'q') move('queued')
      else if (e.key === 'e') move('archived')
      else if (e.key === 'y') decide(true)
      else if (e.key === 'n') decide(false)
      else if (e.key === 's') setSpam(folder !== 'spam')
      else if (e.key === '?') setHelp(true)
      else return
      e.preventDefault()
    }
    document.addEventListener('keydown', onKey)
    return () => document.removeEventListener('keydown', onKey)
  })

  const appName = (id) => (apps.data && (apps.data.data.find((a) => a.id === id) || {}).name) || ''
  const c = counts.data || {}
  return html`<div class="inbox">
    <nav aria-label="Folders" class="folders" ref=${foldersRef}><ul>
      ${FOLDERS.map(
        ([id, label]) => html`<li><${Link} href=${`/admin/o/${org.id}/inbox${qs({ ...filters, folder: id })}`} aria-current=${folder === id ? 'page' : undefined}>
          ${label}${c[id] ? html`<span class="sr-only">, unread:</span> <span class="badge">${c[id] >= 1000 ? '999+' : c[id]}</span>` : ''}</${Link}></li>`,
      )}
    </ul></nav>
    <div class="inbox-main">
      <h1>${(FOLDERS.find(([id]) => id === folder) || [, 'Inbox'])[1]} <span class="muted small">· ${org.name}</span></h1>
      <details class="filter-box" open=${Object.keys(filters).length > 0}><summary>Filters${Object.keys(filters).length ? ` (${Object.keys(filters).length})` : ''}</summary>
        <${Filters} org=${org} apps=${apps.data ? apps.data.data : []} params=${filters} onApply=${(f) => go({ ...Object.fromEntries(FILTERS.map((k) => [k, f[k]])) })} />
      </details>
      <div class="toolbar" aria-label="Bulk actions" role="group">
        <span class="select-all"><input type="checkbox" id="select-all" ref=${selectAllRef} checked=${allChecked} disabled=${!pages.rows.length}
          onChange=${toggleAll} /><label for="select-all">Select all</label></span>
        <button type="button" onClick=${() => move('queued')} disabled=${folder === 'spam' || !canMoveSelected('queued')}>Queue selected</button>
        <button type="button" onClick=${() => move('archived')} disabled=${!canMoveSelected('archived')}>Archive selected</button>
        ${folder === 'spam'
          ? html`<button type="button" onClick=${() => setSpam(false)} disabled=${!selected.length}>Not spam</button>`
          : html`<button type="button" onClick=${() => setSpam(true)} disabled=${!selected.length}>Mark as spam</button>`}
        <span class="muted">${checked.size} selected</span>
        <button type="button" class="link" onClick=${() => setHelp(true)}>Keyboard shortcuts</button>
      </div>
      <p role="status" class="summary">${summary}</p>
      <p aria-live="polite" class="live-note muted small">${liveNote}</p>
      ${liveState === 'reconnecting' && html`<p class="muted small">Live updates paused: reconnecting…</p>`}
      <${ErrorBox} error=${pages.error} />
      ${pages.loading && html`<p>Loading…</p>`}
      ${!pages.loading && !pages.rows.length && html`<p>${pages.next ? 'No match among the newest reports searched so far: search older ones below.' : 'No reports here.'}</p>`}
      <ul class="rows" ref=${listRef} aria-label="Reports">
        ${pages.rows.map(
          (r, i) => html`<li key=${r.id} class=${`row${i === cur ? ' current' : ''}${r.read ? '' : ' unread'}`} data-index=${i} data-id=${r.id} tabindex=${i === cur ? 0 : -1} onFocus=${() => setCur(i)} aria-current=${i === cur ? 'true' : undefined}>
            <input type="checkbox" id=${`sel-${r.id}`} checked=${checked.has(r.id)} onChange=${() => toggle(r.id)} aria-label=${`Select: ${(r.theme || r.text).slice(0, 60)}`} />
            <div class="row-body">
              <${Link} href=${`/admin/o/${org.id}/r/${r.id}`} class="row-text" tabindex="-1">${r.read ? '' : html`<span class="sr-only">Unread: </span>`}${r.theme || r.text.slice(0, 160)}</${Link}>
              <div class="row-meta muted">
                <${ItemStatus} item=${r} />
                ${r.severity && html`<span>${r.severity} severity</span>`}
                <span>${appName(r.appId)}</span>
                ${r.duplicateCount > 0 && html`<span>+${r.duplicateCount} duplicate${r.duplicateCount === 1 ? '' : 's'}</span>`}
                ${r.suggestedDuplicateOf && html`<span class="suggested">possible duplicate (${Math.round(r.suggestedDuplicateOf.score * 100)}%; y confirms, n rejects)</span>`}
                ${r.hasScreenshot && html`<span>screenshot</span>`}
                ${r.hasConsole && html`<span>console log</span>`}
                ${r.spam && html`<span class="spam-tag">Spam, score ${Number(r.spam.score).toFixed(2)}: ${reasonText(r.spam)}</span>`}
                <time datetime=${r.createdAt}>${fmtDate(r.createdAt)}</time>
              </div>
            </div>
            ${results[r.id] && html`<span class=${`result ${results[r.id].ok ? 'ok' : 'bad'}`}>${results[r.id].text}</span>`}
          </li>`,
        )}
      </ul>
      ${pages.next && html`<button type="button" onClick=${more}>Older reports</button>`}
    </div>
    ${help &&
    html`<${Dialog} title="Keyboard shortcuts" onClose=${() => setHelp(false)}>
      <dl class="shortcuts">${SHORTCUTS.map(([k, v]) => html`<dt><kbd>${k}</kbd></dt><dd>${v}</dd>`)}</dl>
      <button type="button" autofocus onClick=${() => setHelp(false)}>Close</button>
    </${Dialog}>`}
  </div>`
}
