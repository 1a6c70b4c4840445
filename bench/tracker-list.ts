/**
 * What issue-tracker sync adds to the list route (GET /v1/feedback, a hot route): one statement per page,
 * the tracker issues of the page's leads (`tracker_issues` by primary key, src/modules/trackers/repo.ts
 * issuesOf). Measured on SQLite against the page's own list query, 100,000 reports of which 10,000 leads
 * have an issue; pages of 50, newest first and at random cursors. `bun bench/tracker-list.ts`
 */
import { rmSync } from 'node:fs'
import { uptime } from 'node:os'
import { execSync } from 'node:child_process'
import { loadConfig } from '../src/config'
import { closeContext, openContext } from '../src/runtime/open'
import { createTenantsService } from '../src/modules/tenants/service'
import { tempDir } from '../test/harness'

const REPORTS = 100_000
const LINKED = 10_000
const PAGES = 2_000

const dir = tempDir('fixloop-bench-trk-')
const ctx = await openContext(loadConfig({ dataDir: dir }, { FIXLOOP_LOG_LEVEL: 'silent' }))
try {
  if (ctx.storage.dialect !== 'sqlite') throw new Error('SQLite only')
  const db = ctx.storage.sqlite
  const tenants = createTenantsService(ctx)
  const org = await tenants.createOrg('Bench')
  const app = await tenants.createApp(org.id, { name: 'Bench App' })
  const ids: string[] = []
  db.transaction(() => {
    const ins = db.query("INSERT INTO feedback (id, org_id, app_id, status, text, submitted_mode, created_at, updated_at) VALUES (?, ?, ?, 'awaiting_manual', 'The checkout total is wrong when a discount applies', 'public', ?, ?)")
    const link = db.query("INSERT INTO tracker_issues (feedback_id, org_id, app_id, kind, issue_id, issue_key, issue_url, state_name, state_category, pushed_size, sync_state, created_at, updated_at) VALUES (?, ?, ?, 'github', ?, ?, ?, 'open', 'open', 1, 'synced', 1, 1)")
    for (let i = 0; i < REPORTS; i++) {
      const id = (1_700_000_000 + i).toString(16).padStart(8, '0') + i.toString(16).padStart(16, '0')
      ids.push(id)
      ins.run(id, org.id, app.id, i, i)
      if (i % (REPORTS / LINKED) === 0) link.run(id, org.id, app.id, String(i + 1), `#${i + 1}`, `https://github.com/acme/shop/issues/${i + 1}`)
    }
  })()
  const lifecycle = ctx.store.lifecycle
  const feedback = ctx.store.feedback
  const trackers = ctx.store.trackers
  const cursors = Array.from({ length: PAGES }, (_, i) => (i === 0 ? undefined : ids[Math.floor(Math.random() * ids.length)]))
  let listMs = 0
  let issuesMs = 0
  let found = 0
  for (let round = 0; round < 2; round++) {
    listMs = issuesMs = found = 0
    for (const cursor of cursors) {
      let t = performance.now()
      const page = await feedback.list({ orgId: org.id, cursor, includeDuplicates: false, limit: 50 })
      listMs += performance.now() - t
      t = performance.now()
      found += (await trackers.issuesOf(page.map((r) => r.id))).length
      issuesMs += performance.now() - t
    }
  }
  console.log(`reports ${REPORTS}, leads with an issue ${LINKED}, pages of 50: ${PAGES}`)
  console.log(`list query      ${((listMs / PAGES) * 1000).toFixed(1)} µs per page`)
  console.log(`tracker issues  ${((issuesMs / PAGES) * 1000).toFixed(1)} µs per page (${(found / PAGES).toFixed(1)} issues found per page)`)
  console.log(`added           ${((issuesMs / listMs) * 100).toFixed(1)} % of the list query`)
  console.log(`uptime: ${execSync('uptime').toString().trim()} (os uptime ${Math.round(uptime())} s)`)
} finally {
  await closeContext(ctx)
  rmSync(dir, { recursive: true, force: true })
}
