// A reporter's data, for Org owners: export every report of an end user (a JSON file) or erase them
// (GET /v1/reporters/feedback, POST /v1/reporters/erase; docs/security.md "A reporter's data").
import { useState } from 'preact/hooks'
import { api, qs } from '@fixloop/api'
import { html, useAction, ErrorBox } from '@fixloop/ui'

export function ReportersPage({ org }) {
  const [by, setBy] = useState('email')
  const [value, setValue] = useState('')
  const [result, setResult] = useState(null)
  const who = () => ({ [by]: value.trim() })
  const [exportAll, exporting, exportError] = useAction(async () => {
    const items = []
    let cursor
    do {
      const page = await api('GET', `/v1/reporters/feedback${qs({ ...who(), cursor, limit: 100 })}`, { org: org.id })
      items.push(...page.data)
      cursor = page.nextCursor
    } while (cursor)
    const url = URL.createObjectURL(new Blob([JSON.stringify({ data: items }, null, 2)], { type: 'application/json' }))
    setResult({ kind: 'export', count: items.length, url })
  })
  const [erase, erasing, eraseError] = useAction(async () => {
    if (!confirm(`Erase every report of ${value.trim()} in ${org.name}, with its attachments? This cannot be undone.`)) return
    const r = await api('POST', '/v1/reporters/erase', { org: org.id, body: who() })
    setResult({ kind: 'erase', count: r.erased })
  })
  return html`<h1>A reporter's data in ${org.name}</h1>
    <p>Export or erase every report of one end user (a data-subject request). Text already sent to an issue tracker, a webhook receiver or Slack is not reached: delete it there.</p>
    <form class="inline" onSubmit=${(e) => (e.preventDefault(), exportAll())}>
      <div class="field"><label for="rep-by">Find by</label>
        <select id="rep-by" value=${by} onChange=${(e) => setBy(e.target.value)}>
          <option value="email">Email</option><option value="externalUserId">External user id</option>
        </select></div>
      <div class="field"><label for="rep-value">Reporter</label><input id="rep-value" required maxlength="320" value=${value} onInput=${(e) => setValue(e.target.value)} /></div>
      <button type="submit" disabled=${exporting || !value.trim()}>Export reports</button>
      <button type="button" class="danger" disabled=${erasing || !value.trim()} onClick=${() => erase()}>Erase reports</button>
    </form>
    <${ErrorBox} error=${exportError || eraseError} />
    ${result &&
    html`<div class="notice" role="status">${result.kind === 'export'
      ? html`<p>${result.count} report${result.count === 1 ? '' : 's'} found. <a href=${result.url} download="reporter-export.json">Download the export</a></p>`
      : html`<p>Erased ${result.count} report${result.count === 1 ? '' : 's'}.</p>`}</div>`}`
}
