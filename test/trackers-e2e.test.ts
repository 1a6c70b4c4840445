/**
 * Issue-tracker sync end to end against the compiled binary (issue 26's "Done when": GitHub, GitLab and
 * Gitea, each through the stub of test/tracker-stub.ts): the CLI connects each App's tracker with a rule
 * (push a lead reaching 2 duplicates; the token from a file, never printed), three reports come in through
 * the widget route and are merged into one lead, the rule creates the issue on the stub; fixloop's own
 * echo (a delivery whose sender is the token's user) and its own comment change nothing; a maintainer
 * closing the issue (signed webhook) resolves the lead and both duplicates, with `feedback.status_changed`
 * and `feedback.resolved` in the pull feed; reopening brings them back. An issue deleted on the tracker
 * (GitHub, Gitea deliveries) stops its syncing; a tracker that fails (its answer quoting the token) shows
 * in the health and /readyz, and the token is in no response and no log line.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHmac, randomUUID } from 'node:crypto'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { BINARY, call, eventually, tempDir, runBinary } from './harness'
import { cliJson, cliTenant } from './helpers-lifecycle'
import { spawnWithStdout, type SpawnedServer } from './dashboard-helpers'
import { BOT, issueHook, startTrackerStub, STUB_PROJECT, type HookDelivery, type StubIssue, type StubKind, type TrackerStub } from './tracker-stub'

const LOCAL = { FIXLOOP_TRACKER_ALLOW_PRIVATE: '1' }
const KINDS = ['github', 'gitlab', 'gitea'] as const
type Tenant = Awaited<ReturnType<typeof cliTenant>>
let dir: string
let srv: SpawnedServer
const stubs = {} as Record<StubKind, TrackerStub>
const tenants = {} as Record<StubKind, Tenant>
const secrets = {} as Record<StubKind, string>

beforeAll(async () => {
  dir = tempDir('fixloop-trackers-e2e-')
  for (const kind of KINDS) {
    const stub = (stubs[kind] = startTrackerStub(kind))
    const tenant = (tenants[kind] = await cliTenant(dir))
    const tokenFile = join(dir, `tracker-token-${kind}`)
    await Bun.write(tokenFile, `${stub.token}\n`)
    const raw = await runBinary(['tracker', 'connect', '--app', tenant.appId, '--kind', kind, '--api-url', stub.apiUrl, '--project', STUB_PROJECT, '--token-file', tokenFile, '--min-duplicates', '2', '--data-dir', dir, '--json'], LOCAL)
    expect(raw.code).toBe(0)
    expect(raw.stdout + raw.stderr).not.toContain(stub.token)
    const connected = JSON.parse(raw.stdout)
    expect(connected).toMatchObject({ appId: tenant.appId, kind, actor: BOT, rules: { minDuplicates: 2, onAwaitingManual: [] } })
    // The CLI does not know the server's port or address: no guessed http://127.0.0.1:8080 URL, the path and a hint instead.
    expect(connected).toMatchObject({ webhookUrl: null, webhookPath: `/v1/tracker-hooks/${tenant.appId}` })
    expect(connected.webhookUrlHint).toContain('FIXLOOP_PUBLIC_URL')
    secrets[kind] = connected.webhookSecret
  }
  // Warnings and up on stdout, kept: no log line may carry a token.
  srv = await spawnWithStdout(dir, { ...LOCAL, FIXLOOP_TRACKER_POLL_MINUTES: '0', FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
}, 60_000)

afterAll(async () => {
  await srv?.stop()
  for (const s of Object.values(stubs)) s.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

const item = async (t: Tenant, id: string) => (await call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).body
async function submit(t: Tenant, text: string): Promise<string> {
  const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text, severity: 'medium' } })
  expect(r.status).toBe(201)
  await eventually(async () => (await item(t, r.body.id)).status === 'awaiting_manual', 20_000)
  return r.body.id
}
const hook = (t: Tenant, d: HookDelivery) => call(srv.url, 'POST', `/v1/tracker-hooks/${t.appId}`, { rawBody: d.body, headers: d.headers })
const mac = (secret: string, body: string) => createHmac('sha256', secret).update(body).digest('hex')

/** The delivery a tracker sends for fixloop's own growth comment (GitHub/Gitea issue_comment, GitLab Note Hook). */
function ownComment(kind: StubKind, issue: StubIssue, secret: string): HookDelivery {
  if (kind === 'gitlab') {
    const body = JSON.stringify({ object_kind: 'note', event_type: 'note', user: { id: 1, username: BOT }, project: { id: 42, path_with_namespace: STUB_PROJECT }, object_attributes: { id: 7, note: 'fixloop: 1 more report', noteable_type: 'Issue' }, issue: { iid: issue.number, state: 'opened' } })
    return { headers: { 'content-type': 'application/json', 'x-gitlab-event': 'Note Hook', 'x-gitlab-token': secret, 'x-gitlab-event-uuid': randomUUID() }, body }
  }
  const body = JSON.stringify({ action: 'created', issue: { number: issue.number, state: 'open' }, comment: { body: 'fixloop: 1 more report', user: { login: BOT } }, repository: { full_name: STUB_PROJECT }, sender: { login: BOT } })
  return kind === 'github'
    ? { headers: { 'content-type': 'application/json', 'x-github-event': 'issue_comment', 'x-github-delivery': randomUUID(), 'x-hub-signature-256': `sha256=${mac(secret, body)}` }, body }
    : { headers: { 'content-type': 'application/json', 'x-gitea-event': 'issue_comment', 'x-gitea-delivery': randomUUID(), 'x-gitea-signature': mac(secret, body) }, body }
}
const issuesPath = (kind: StubKind) => (kind === 'github' ? `/repos/${STUB_PROJECT}/issues` : kind === 'gitlab' ? `/api/v4/projects/${encodeURIComponent(STUB_PROJECT)}/issues` : `/api/v1/repos/${STUB_PROJECT}/issues`)

for (const kind of KINDS) {
  describe(kind, () => {
    let t: Tenant
    let stub: TrackerStub
    let lead: string
    beforeAll(() => {
      t = tenants[kind]
      stub = stubs[kind]
    })

    test('rule push → issue on the tracker → closed there (signed webhook) → lead and duplicates resolved, events in the feed, no echo; reopened → back', async () => {
      lead = await submit(t, 'The checkout total ignores the discount code when paying with a gift card')
      const dup1 = await submit(t, 'Password reset email never arrives for addresses with a plus sign')
      const dup2 = await submit(t, 'Map widget on the store locator renders grey tiles only')
      expect((await call(srv.url, 'POST', `/v1/feedback/${dup1}/merge`, { auth: t.key, body: { leadId: lead } })).status).toBe(200)
      // One duplicate: below the rule, no issue.
      await Bun.sleep(300)
      expect(stub.issues.size).toBe(0)
      expect((await call(srv.url, 'POST', `/v1/feedback/${dup2}/merge`, { auth: t.key, body: { leadId: lead } })).status).toBe(200)
      const issue = await eventually(() => stub.issues.get(1), 20_000)
      expect(issue.title).toStartWith('The checkout total ignores the discount code')
      expect(issue.body).toContain('**Reports:** 3')
      // Gitea labels are ids: this stub's repository has no severity:medium label, so only fixloop (11) is set.
      expect(issue.labels).toEqual(kind === 'github' ? ['fixloop', 'severity:medium'] : kind === 'gitlab' ? 'fixloop,severity:medium' : [11])
      const shown = await eventually(async () => ((await item(t, dup2)).trackerIssue?.syncState === 'synced' ? (await item(t, dup2)).trackerIssue : undefined), 20_000)
      expect(shown).toMatchObject({ kind, key: '#1', state: kind === 'gitlab' ? 'opened' : 'open' })
      expect(shown.url).toBe(kind === 'gitlab' ? `${stub.url}/${STUB_PROJECT}/-/issues/1` : `${stub.url}/${STUB_PROJECT}/issues/1`)

      // fixloop's own writes come back as deliveries: its comment and any change by its user are ignored.
      expect((await hook(t, ownComment(kind, issue, secrets[kind]))).body).toEqual({ received: true, outcome: 'ignored' })
      issue.state = 'closed'
      expect((await hook(t, issueHook(stub, 'closed', issue, secrets[kind], BOT))).body).toEqual({ received: true, outcome: 'echo' })
      expect((await hook(t, issueHook(stub, 'closed', issue, 'a-forged-secret-0123456789', 'maintainer'))).status).toBe(401)
      expect((await item(t, lead)).status).toBe('awaiting_manual')

      // A maintainer closes it.
      expect((await hook(t, issueHook(stub, 'closed', issue, secrets[kind], 'maintainer'))).body).toEqual({ received: true, outcome: 'moved' })
      for (const id of [lead, dup1, dup2]) expect((await item(t, id)).status).toBe('resolved')
      const feed = (await call(srv.url, 'GET', '/v1/events?limit=500', { auth: t.key })).body.data as any[]
      expect(feed.filter((e) => e.type === 'feedback.resolved').map((e) => e.data.feedbackId).sort()).toEqual([lead, dup1, dup2].sort())
      expect(feed.filter((e) => e.type === 'feedback.status_changed' && e.data.to === 'resolved').map((e) => e.data.feedbackId).sort()).toEqual([lead, dup1, dup2].sort())
      // fixloop wrote one issue (no comment: the text was replaced before any growth), never a state change.
      expect(stub.requests.filter((r) => r.method !== 'GET').map((r) => `${r.method} ${r.path}`)).toEqual([`POST ${issuesPath(kind)}`])

      const show = await cliJson(dir, ['tracker', 'show', '--app', t.appId])
      expect(show.health).toMatchObject({ state: 'ok', pending: 0 })
      expect(show.webhookUrl).toBeNull()
      const withPublic = await runBinary(['tracker', 'show', '--app', t.appId, '--data-dir', dir, '--json'], { FIXLOOP_PUBLIC_URL: 'https://fixloop.example/' })
      expect(JSON.parse(withPublic.stdout)).toMatchObject({ webhookUrl: `https://fixloop.example/v1/tracker-hooks/${t.appId}`, webhookPath: `/v1/tracker-hooks/${t.appId}` })
      expect(JSON.parse(withPublic.stdout).webhookUrlHint).toBeUndefined()
      expect(JSON.stringify(show)).not.toContain(stub.token)
      expect(await cliJson(dir, ['tracker', 'push', '--feedback', lead])).toMatchObject({ created: false, key: '#1', state: 'closed' })

      // Reopened by a person: the lead and its duplicates go back to awaiting_manual.
      issue.state = 'open'
      expect((await hook(t, issueHook(stub, 'reopened', issue, secrets[kind]))).body.outcome).toBe('moved')
      for (const id of [lead, dup1, dup2]) expect((await item(t, id)).status).toBe('awaiting_manual')
    }, 90_000)

    if (kind !== 'gitlab') {
      // GitLab sends no delivery for a deleted issue (polling finds it: test/trackers.test.ts).
      test('the issue deleted on the tracker: the link is marked deleted, nothing moves, no second issue', async () => {
        const issue = stub.issues.get(1)!
        issue.deleted = true
        expect((await hook(t, issueHook(stub, 'deleted', issue, secrets[kind]))).body).toEqual({ received: true, outcome: 'deleted' })
        expect((await item(t, lead)).trackerIssue).toMatchObject({ key: '#1', syncState: 'deleted' })
        expect((await item(t, lead)).status).toBe('awaiting_manual')
        const again = await call(srv.url, 'POST', `/v1/feedback/${lead}/tracker-issue`, { auth: t.key })
        expect(again.status).toBe(409)
        expect(again.body.error.code).toBe('invalid_transition')
        expect(stub.issues.size).toBe(1)
      }, 30_000)
    }

    test('a failing tracker (its answer quoting the token): health and /readyz show it, intake goes on, the token is in no answer and no log line', async () => {
      const id = await submit(t, 'Exporting the invoice list to CSV drops the last row every time')
      stub.faults.push({ status: 401, body: { message: `Bad credentials: ${stub.token} was revoked` } })
      expect((await call(srv.url, 'POST', `/v1/feedback/${id}/tracker-issue`, { auth: t.key })).status).toBe(202)
      const failing = await eventually(async () => {
        const v = (await call(srv.url, 'GET', `/v1/apps/${t.appId}/tracker`, { auth: t.key })).body.tracker
        return v.health.state === 'failing' ? v : undefined
      }, 20_000)
      expect(failing.health.lastError).toContain('401')
      expect(failing.health.lastError).toContain('was revoked')
      expect(failing.health.lastError).not.toContain(stub.token)
      const link = await eventually(async () => ((await item(t, id)).trackerIssue?.syncState === 'failing' ? (await item(t, id)).trackerIssue : undefined), 20_000)
      expect(link.lastError).toContain('401')
      const ready = await call(srv.url, 'GET', '/readyz')
      expect(ready.status).toBe(200)
      expect(ready.body.checks.trackers).toMatchObject({ ok: false, advisory: true })
      // A count only: /readyz is public; which App fails is for the operator's token (trackers.test.ts).
      expect(ready.body.checks.trackers.failing).toBeGreaterThanOrEqual(1)
      expect(ready.text).not.toContain(t.appId)
      // Intake and the lifecycle go on while the tracker fails.
      const other = await submit(t, 'Dark mode toggle forgets its setting after a reload on Safari')
      expect((await call(srv.url, 'PATCH', `/v1/feedback/${other}`, { auth: t.key, body: { status: 'archived' } })).status).toBe(200)
      const show = await runBinary(['tracker', 'show', '--app', t.appId, '--data-dir', dir, '--json'])
      for (const text of [ready.text, JSON.stringify(await item(t, id)), JSON.stringify(failing), show.stdout + show.stderr]) expect(text).not.toContain(stub.token)
      await eventually(() => srv.stdout().includes('tracker push failed'), 10_000)
      expect(srv.stdout()).not.toContain(stub.token)
    }, 60_000)

    if (kind === 'github') {
      test('CLI: rotate the webhook secret, reconnect (token on standard input, env), disconnect: the links stay readable', async () => {
        const unknown = { number: 999_001, state: 'closed' } as StubIssue
        const rotated = await cliJson(dir, ['tracker', 'rotate-webhook-secret', '--app', t.appId])
        expect(rotated.webhookSecret).not.toBe(secrets.github)
        expect((await hook(t, issueHook(stub, 'closed', unknown, secrets.github))).status).toBe(401)
        expect((await hook(t, issueHook(stub, 'closed', unknown, rotated.webhookSecret))).body.outcome).toBe('ignored')
        // Reconnect with the token on standard input: the connection, no new secret; the health cleared.
        const piped = Bun.spawn([BINARY, 'tracker', 'connect', '--app', t.appId, '--kind', 'github', '--api-url', stub.apiUrl, '--project', STUB_PROJECT, '--token-file', '-', '--data-dir', dir, '--json'], { env: { PATH: process.env.PATH ?? '', ...LOCAL }, stdin: new TextEncoder().encode(`${stub.token}\n`), stdout: 'pipe', stderr: 'pipe' })
        const pipedOut = await new Response(piped.stdout).text()
        const pipedCode = await piped.exited
        expect({ pipedCode, err: await new Response(piped.stderr).text() }).toEqual({ pipedCode: 0, err: '' })
        expect(JSON.parse(pipedOut)).toMatchObject({ actor: BOT, rules: { minDuplicates: 2 }, health: { state: 'ok' } })
        expect(pipedOut).not.toContain('webhookSecret')
        const viaEnv = await runBinary(['tracker', 'connect', '--app', t.appId, '--kind', 'github', '--api-url', stub.apiUrl, '--project', STUB_PROJECT, '--data-dir', dir, '--json'], { ...LOCAL, FIXLOOP_TRACKER_TOKEN: 'revoked-token' })
        expect(viaEnv.code).toBe(2)
        expect(viaEnv.stderr).toContain('401')
        expect(viaEnv.stderr).not.toContain('revoked-token')
        expect(await cliJson(dir, ['tracker', 'disconnect', '--app', t.appId])).toEqual({ appId: t.appId, disconnected: true })
        const gone = await runBinary(['tracker', 'show', '--app', t.appId, '--data-dir', dir])
        expect(gone.code).toBe(2)
        expect(gone.stderr).toContain('no tracker connected')
        expect((await item(t, lead)).trackerIssue).toMatchObject({ key: '#1', syncState: 'deleted' })
      }, 60_000)
    }
  })
}
