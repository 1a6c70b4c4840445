/**
 * `fixloop feedback suggestions|merge|reject-suggestion|resolve`, run as the compiled binary against the data
 * dir of a running `fixloop serve`: --json shapes, the people's table, the change seen by the API at
 * once, errors on stderr with a non-zero exit and nothing on stdout.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { call, runBinary, spawnServer, tempDir } from './harness'
import { cliJson, cliTenant, ensureBinary, openDataDb, submit } from './helpers-lifecycle'

const LEAD = 'The checkout button does nothing when I click it on the payment page.'
const NEAR = 'The checkout button is slow when I click it on the payment page, it takes ten seconds.'
const URL_ = 'https://shop.example/checkout/payment'

let dataDir: string
let server: Awaited<ReturnType<typeof spawnServer>>
let tenant: Awaited<ReturnType<typeof cliTenant>>

beforeAll(async () => {
  ensureBinary()
  dataDir = tempDir('fixloop-cli-feedback-')
  tenant = await cliTenant(dataDir)
  server = await spawnServer(dataDir)
})
afterAll(async () => {
  await server?.stop()
  rmSync(dataDir, { recursive: true, force: true })
})

/** Waits until the report is processed (a lead moves to awaiting_manual). */
async function settled(id: string): Promise<any> {
  for (let i = 0; i < 200; i++) {
    const r = await call(server.url, 'GET', `/v1/feedback/${id}`, { auth: tenant.key })
    if (r.body.status === 'awaiting_manual' || r.body.duplicateOfId) return r.body
    await Bun.sleep(50)
  }
  throw new Error(`report ${id} was not processed`)
}

/** A lead and a report suggested as its duplicate, in a new App of the tenant's Org (no cross-talk between tests). */
async function pair(): Promise<{ lead: string; near: string; appId: string }> {
  const app = await cliJson(dataDir, ['app', 'create', '--org', tenant.orgId, '--name', `App ${Math.random()}`])
  const lead = (await submit(server.url, app.publicKey, { text: LEAD, url: URL_ })).body.id
  await settled(lead)
  const near = (await submit(server.url, app.publicKey, { text: NEAR, url: URL_ })).body.id
  await settled(near)
  return { lead, near, appId: app.id }
}

describe('fixloop feedback', () => {
  test('the triage routes refuse junk with the error envelope, never a 5xx; reset answers the counts and is 404 across Orgs; the CLI resets too', async () => {
    const app = await cliJson(dataDir, ['app', 'create', '--org', tenant.orgId, '--name', `Fuzz ${Math.random()}`])
    for (const q of ['?unmergeScore=abc', '?unmergeScore=2', '?unmergeScore=-1', '?unmergeScore=%00', '?junk=1', '?unmergeScore=1&unmergeScore=2', '?unmergeScore[a][b]=1', `?unmergeScore=${'9'.repeat(5000)}`]) {
      const r = await call(server.url, 'GET', `/v1/apps/${app.id}/triage${q}`, { auth: tenant.key })
      expect(r.status, q).toBe(400)
      expect(r.body.error.code, q).toBe('invalid_body')
    }
    const ok = await call(server.url, 'GET', `/v1/apps/${app.id}/triage?unmergeScore=1`, { auth: tenant.key })
    expect(ok.status).toBe(200)
    expect(ok.body.afterUnmerge.merge).toBeLessThan(1)
    for (const id of ['zz', 'f'.repeat(5000), '%00']) {
      const r = await call(server.url, 'POST', `/v1/apps/${id}/triage/reset`, { auth: tenant.key })
      expect(r.status).toBeGreaterThanOrEqual(400)
      expect(r.status).toBeLessThan(500)
    }
    const other = await cliJson(dataDir, ['org', 'create', '--name', 'Other'])
    const otherKey = await cliJson(dataDir, ['key', 'create', '--org', other.id])
    expect((await call(server.url, 'POST', `/v1/apps/${app.id}/triage/reset`, { auth: otherKey.key })).status).toBe(404)
    // Reset takes no body: fields sent to it are unknown fields (spec part 1: invalid_body).
    const junk = await call(server.url, 'POST', `/v1/apps/${app.id}/triage/reset`, { auth: tenant.key, body: { junk: { a: { b: 1 } } } })
    expect([junk.status, junk.body.error.code]).toEqual([400, 'invalid_body'])
    const reset = await call(server.url, 'POST', `/v1/apps/${app.id}/triage/reset`, { auth: tenant.key })
    expect(reset.status).toBe(200)
    expect(reset.body.removed).toEqual({ confirmed: 0, rejected: 0, unmerged: 0 })
    const cli = await cliJson(dataDir, ['app', 'triage-reset', app.id])
    expect(cli.removed).toEqual({ confirmed: 0, rejected: 0, unmerged: 0 })
    expect(Object.keys(cli).sort()).toEqual(['bars', 'learned', 'removed'])
  })

  // Issue 36 item 5: ONE source of truth for an App's bars: the CLI (its own process) says what the API
  // and the dashboard say, for an App with history (identical reports among others) and an unmerge.
  test('suggestions --json shows the same bars as GET /v1/apps/:id/triage', async () => {
    const app = await cliJson(dataDir, ['app', 'create', '--org', tenant.orgId, '--name', `Bars ${Math.random()}`])
    const texts = [
      'The invoice PDF downloads as an empty file from the billing page.',
      'Dark mode resets to light every time I reload the dashboard.',
      'The invoice PDF downloads as an empty file from the billing page.',
      'Push notifications arrive twice on Android after the last update.',
      'The map on the store locator never finishes loading in Firefox.',
      'Dark mode resets to light every time I reload the dashboard.',
      'Exporting the report to CSV cuts off the last column.',
      'The chat widget covers the cookie banner on small phones.',
      'Password reset emails take more than an hour to arrive.',
      'The map on the store locator never finishes loading in Firefox.',
      'Sorting the orders table by date puts May before April.',
      'The avatar upload rejects PNG files larger than one megabyte.',
      'Exporting the report to CSV cuts off the last column.',
    ]
    const ids: string[] = []
    for (const text of texts) {
      const id = (await submit(server.url, app.publicKey, { text, url: URL_ })).body.id
      await settled(id)
      ids.push(id)
    }
    const twin = (await call(server.url, 'GET', `/v1/feedback/${ids[2]}`, { auth: tenant.key })).body
    expect(twin.duplicateMatch?.automatic).toBe(true)
    expect((await call(server.url, 'POST', `/v1/feedback/${ids[2]}/unmerge`, { auth: tenant.key })).status).toBe(200)
    const api = (await call(server.url, 'GET', `/v1/apps/${app.id}/triage`, { auth: tenant.key })).body
    const cli = await cliJson(dataDir, ['feedback', 'suggestions', '--app', app.id])
    expect(cli.bars).toEqual(api.bars)
    expect(cli.learned).toEqual(api.learned)
    expect(cli.arrival).toEqual(api.arrival)
    expect(api.bars.merge).toBeLessThan(1)
  })

  test('suggestions --json lists the suggested reports with the App bars; the table shows lead, score, reason', async () => {
    const { lead, near, appId } = await pair()
    const out = await cliJson(dataDir, ['feedback', 'suggestions', '--app', appId])
    expect(Object.keys(out).sort()).toEqual(['arrival', 'bars', 'data', 'learned'])
    const mine = out.data.find((d: { id: string }) => d.id === near)
    expect(mine.suggestedDuplicateOf.id).toBe(lead)
    expect(mine.text).toBe(NEAR)
    expect(out.data.find((d: { id: string }) => d.id === lead)).toBeUndefined()
    expect(out.bars.merge).toBeGreaterThan(out.bars.suggest)
    const table = await runBinary(['feedback', 'suggestions', '--app', appId, '--data-dir', dataDir])
    expect(table.code).toBe(0)
    expect(table.stdout).toMatch(/^ID\s+LEAD\s+SCORE\s+REASON\s+TEXT/)
    expect(table.stdout).toContain(near)
    expect(table.stdout).toMatch(/bars: \{"merge":/)
    expect(table.stdout).toMatch(/arrival: \{"locality":0,"bonusAtMost":0,"longAgoBlock":false,"mergeBar":null,"mergeWithin":null\}/)
  })

  test('reject-suggestion --json prints the report without its suggestion; the API agrees; the decision is counted', async () => {
    const { near, appId } = await pair()
    const out = await cliJson(dataDir, ['feedback', 'reject-suggestion', near])
    expect(out.id).toBe(near)
    expect(out.suggestedDuplicateOf).toBeNull()
    expect((await call(server.url, 'GET', `/v1/feedback/${near}`, { auth: tenant.key })).body.suggestedDuplicateOf).toBeNull()
    // The server learns a decision another process recorded within about a second (LESSON_TTL_MS).
    let rejected = 0
    for (let i = 0; i < 40 && rejected === 0; i++) {
      rejected = (await call(server.url, 'GET', `/v1/apps/${appId}/triage`, { auth: tenant.key })).body.learned.decisions.rejected
      if (rejected === 0) await Bun.sleep(100)
    }
    expect(rejected).toBe(1)
  })

  test('merge --lead confirms: the report is a duplicate of the lead, matched by hand with the suggestion score', async () => {
    const { lead, near } = await pair()
    const score = (await call(server.url, 'GET', `/v1/feedback/${near}`, { auth: tenant.key })).body.suggestedDuplicateOf.score
    const out = await cliJson(dataDir, ['feedback', 'merge', near, '--lead', lead])
    expect(out.duplicateOfId).toBe(lead)
    expect(out.duplicateMatch).toEqual({ automatic: false, score, reason: 'confirmed suggestion' })
    expect((await call(server.url, 'GET', `/v1/feedback/${lead}`, { auth: tenant.key })).body.duplicateCount).toBe(1)
  })

  test('resolve marks a lead fixed by hand: resolved with its duplicate, seen by the API at once, audited as the CLI; again: 409 on stderr', async () => {
    const { lead, near } = await pair()
    await cliJson(dataDir, ['feedback', 'merge', near, '--lead', lead])
    const out = await cliJson(dataDir, ['feedback', 'resolve', lead])
    expect(out).toMatchObject({ id: lead, status: 'resolved' })
    expect((await call(server.url, 'GET', `/v1/feedback/${near}`, { auth: tenant.key })).body.status).toBe('resolved')
    const db = openDataDb(dataDir)
    try {
      expect(db.query("SELECT actor, data FROM audit_log WHERE action = 'feedback.marked_fixed' AND target_id = ?").all(lead)).toEqual([
        { actor: 'cli', data: JSON.stringify({ appId: out.appId, from: 'awaiting_manual', duplicatesResolved: 1 }) },
      ])
      expect(db.query("SELECT COUNT(*) AS n FROM events WHERE type = 'feedback.resolved' AND feedback_id IN (?, ?)").get(lead, near)).toEqual({ n: 2 })
    } finally {
      db.close()
    }
    const again = await runBinary(['feedback', 'resolve', lead, '--data-dir', dataDir])
    expect([again.code, again.stdout]).toEqual([2, ''])
    expect(again.stderr).toMatch(/does not allow this move/)
    const dup = await runBinary(['feedback', 'resolve', near, '--data-dir', dataDir])
    expect(dup.code).toBe(2)
  })

  test('errors: stderr, a non-zero exit, nothing on stdout', async () => {
    const cases: [string[], RegExp][] = [
      [['feedback'], /missing command/],
      [['feedback', 'sugestions', '--app', tenant.appId], /unknown command.*suggestions/s],
      [['feedback', 'suggestions'], /missing --app/],
      [['feedback', 'suggestions', '--app', '0'.repeat(24)], /unknown app/],
      [['feedback', 'merge', '0'.repeat(24)], /missing --lead/],
      [['feedback', 'merge', '0'.repeat(24), '--lead', '1'.repeat(24)], /unknown report/],
      [['feedback', 'reject-suggestion'], /missing FEEDBACK_ID/],
      [['feedback', 'reject-suggestion', '0'.repeat(24), '--lead', 'x'], /does not take --lead/],
      [['feedback', 'resolve'], /missing FEEDBACK_ID/],
      [['feedback', 'resolve', '0'.repeat(24)], /unknown report/],
      [['feedback', 'resolve', '0'.repeat(24), '--app', 'x'], /does not take --app/],
    ]
    for (const [args, message] of cases) {
      const r = await runBinary([...args, '--data-dir', dataDir])
      expect({ args, code: r.code === 0 ? 0 : 'non-zero', stdout: r.stdout }).toEqual({ args, code: 'non-zero', stdout: '' })
      expect(r.stderr).toMatch(message)
    }
  })
})
