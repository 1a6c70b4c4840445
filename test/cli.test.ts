/**
 * The admin CLI of CONTRACT.md, run as the compiled binary: --json shapes, help, errors, the data dir,
 * and changes reaching a running `fixloop serve` at once.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { BINARY, call, freePort, runBinary, spawnServer, tempDir } from './harness'
import { cliJson, ensureBinary, submit } from './helpers-lifecycle'

const HEX24 = /^[0-9a-f]{24}$/
const APP_KEYS = [
  'allowedOrigins',
  'batchEnabled',
  'batchWindowHours',
  'createdAt',
  'description',
  'id',
  'name',
  'processingMode',
  'proofOfWork',
  'publicKey',
  'publicSubmissionEnabled',
  'slug',
  'spamEvents',
  'spamRetentionDays',
  'retentionDays',
  'replay',
].sort()

const dirs: string[] = []
function freshDir(): string {
  const d = tempDir('fixloop-cli-')
  dirs.push(d)
  return d
}

let dataDir: string
let orgId: string

beforeAll(async () => {
  ensureBinary()
  dataDir = freshDir()
  orgId = (await cliJson(dataDir, ['org', 'create', '--name', 'Acme Inc'])).id
})
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/** Asserts a clean failure: non-zero exit, a message on stderr, nothing on stdout. */
async function expectFailure(args: string[], message: RegExp, env: Record<string, string> = {}) {
  const r = await runBinary(args, env)
  expect({ args, code: r.code === 0 ? 0 : 'non-zero', stdout: r.stdout }).toEqual({ args, code: 'non-zero', stdout: '' })
  expect(r.stderr).toMatch(message)
  return r
}

describe('names', () => {
  test('an Org or App name with a line break, a tab or another control character is refused (exit 2), before anything is stored', async () => {
    for (const name of ['Shop\r\nBcc: x@evil.example', 'Tab\tbed', 'Bell\u0007', 'C1\u0085']) {
      const org = await expectFailure(['org', 'create', '--name', name, '--data-dir', dataDir], /one line of text/)
      expect(org.code).toBe(2)
      await expectFailure(['app', 'create', '--org', orgId, '--name', name, '--data-dir', dataDir], /one line of text/)
    }
    const apps = await cliJson(dataDir, ['app', 'list', '--org', orgId])
    expect(JSON.stringify(apps)).not.toMatch(/Bcc|Tab\\tbed/)
  })
})

describe('commands and their --json output', () => {
  test('org create → {id, name}', async () => {
    const org = await cliJson(dataDir, ['org', 'create', '--name', 'Beta Org'])
    expect(Object.keys(org).sort()).toEqual(['id', 'name'])
    expect(org.id).toMatch(HEX24)
    expect(org.name).toBe('Beta Org')
  })

  test('key create → {id, key}', async () => {
    const key = await cliJson(dataDir, ['key', 'create', '--org', orgId, '--name', 'ci'])
    expect(Object.keys(key).sort()).toEqual(['id', 'key'])
    expect(key.id).toMatch(HEX24)
    expect(key.key).toMatch(/^sk_[A-Za-z0-9_-]{20,}$/)
    // The plaintext is shown once: listing shows no key.
    const list = await cliJson(dataDir, ['key', 'list', '--org', orgId])
    expect(JSON.stringify(list)).not.toContain(key.key)
    expect(list.data.map((k: any) => k.id)).toContain(key.id)
  })

  test('app create → the App of spec 2.1 plus signingSecret, with the contract defaults', async () => {
    const app = await cliJson(dataDir, ['app', 'create', '--org', orgId, '--name', 'Web Shop'])
    expect(Object.keys(app).sort()).toEqual([...APP_KEYS, 'signingSecret'].sort())
    expect(app.id).toMatch(HEX24)
    expect(app.publicKey).toMatch(/^pub_/)
    expect(app.signingSecret).toMatch(/^[0-9a-f]{64}$/)
    expect(app).toMatchObject({
      name: 'Web Shop',
      slug: 'web-shop',
      description: '',
      publicSubmissionEnabled: true,
      allowedOrigins: [],
      processingMode: 'manual',
      batchEnabled: false,
      batchWindowHours: 24,
      spamRetentionDays: 30,
      retentionDays: 0,
      replay: { mode: 'off', seconds: 60 },
    })
    expect(new Date(app.createdAt).toISOString()).toBe(app.createdAt)
  })

  test('app create with every setting', async () => {
    const app = await cliJson(dataDir, [
      'app', 'create', '--org', orgId, '--name', 'Full', '--slug', 'full-app', '--public-submission', 'false',
      '--allowed-origins', 'https://a.example,https://B.example/', '--processing-mode', 'auto_pr', '--batch', 'true', '--batch-window-hours', '6',
      '--proof-of-work', 'high', '--spam-events', 'true', '--spam-retention-days', '0', '--retention-days', '90',
      '--replay', 'masked', '--replay-seconds', '120',
    ])
    expect(app).toMatchObject({
      slug: 'full-app',
      publicSubmissionEnabled: false,
      allowedOrigins: ['https://a.example', 'https://b.example'],
      processingMode: 'auto_pr',
      batchEnabled: true,
      batchWindowHours: 6,
      proofOfWork: 'high',
      spamEvents: true,
      spamRetentionDays: 0,
      retentionDays: 90,
      replay: { mode: 'masked', seconds: 120 },
    })
  })

  test('app update --replay / --replay-seconds: each part alone, the other kept', async () => {
    const app = await cliJson(dataDir, ['app', 'create', '--org', orgId, '--name', 'Replayed'])
    expect(app.replay).toEqual({ mode: 'off', seconds: 60 })
    expect((await cliJson(dataDir, ['app', 'update', app.id, '--replay', 'inputs'])).replay).toEqual({ mode: 'inputs', seconds: 60 })
    expect((await cliJson(dataDir, ['app', 'update', app.id, '--replay-seconds', '300'])).replay).toEqual({ mode: 'inputs', seconds: 300 })
    expect((await cliJson(dataDir, ['app', 'update', app.id, '--replay', 'off', '--replay-seconds', '10'])).replay).toEqual({ mode: 'off', seconds: 10 })
  })

  test('app update → the App (no secret); unchanged settings stay', async () => {
    const app = await cliJson(dataDir, ['app', 'create', '--org', orgId, '--name', 'To Update', '--allowed-origins', 'https://x.example'])
    const updated = await cliJson(dataDir, ['app', 'update', app.id, '--processing-mode', 'auto_pr', '--batch-window-hours', '48', '--name', 'Renamed', '--proof-of-work', 'normal'])
    expect(Object.keys(updated).sort()).toEqual(APP_KEYS)
    expect(updated).toMatchObject({
      id: app.id,
      publicKey: app.publicKey,
      name: 'Renamed',
      proofOfWork: 'normal',
      spamEvents: false,
      processingMode: 'auto_pr',
      batchWindowHours: 48,
      allowedOrigins: ['https://x.example'],
      publicSubmissionEnabled: true,
      createdAt: app.createdAt,
    })
    const cleared = await cliJson(dataDir, ['app', 'update', app.id, '--allowed-origins', ''])
    expect(cleared.allowedOrigins).toEqual([])
    const listed = await cliJson(dataDir, ['app', 'list', '--org', orgId])
    expect(listed.data.find((a: any) => a.id === app.id)).toEqual(cleared)
  })

  test('app rotate-secret → {signingSecret}, a new one', async () => {
    const app = await cliJson(dataDir, ['app', 'create', '--org', orgId, '--name', 'Rotating'])
    const rotated = await cliJson(dataDir, ['app', 'rotate-secret', app.id])
    expect(Object.keys(rotated)).toEqual(['signingSecret'])
    expect(rotated.signingSecret).toMatch(/^[0-9a-f]{64}$/)
    expect(rotated.signingSecret).not.toBe(app.signingSecret)
  })

  test('app delete and key revoke exit 0; the deleted App is gone for later commands', async () => {
    const app = await cliJson(dataDir, ['app', 'create', '--org', orgId, '--name', 'Doomed'])
    const del = await runBinary(['app', 'delete', app.id, '--data-dir', dataDir])
    expect(del.code).toBe(0)
    expect(del.stderr).toBe('')
    await expectFailure(['app', 'update', app.id, '--name', 'x', '--data-dir', dataDir], /unknown app/)
    const listed = await cliJson(dataDir, ['app', 'list', '--org', orgId])
    expect(listed.data.some((a: any) => a.id === app.id)).toBe(false)
    // The slug is free again.
    expect((await cliJson(dataDir, ['app', 'create', '--org', orgId, '--name', 'Doomed'])).slug).toBe('doomed')

    const key = await cliJson(dataDir, ['key', 'create', '--org', orgId])
    const revoke = await runBinary(['key', 'revoke', key.id, '--data-dir', dataDir])
    expect(revoke.code).toBe(0)
    expect(revoke.stderr).toBe('')
    const again = await cliJson(dataDir, ['key', 'revoke', key.id])
    expect(again.id).toBe(key.id)
    const list = await cliJson(dataDir, ['key', 'list', '--org', orgId])
    expect(list.data.find((k: any) => k.id === key.id).revokedAt).toBeTruthy()
  })
})

describe('--help', () => {
  const cases = [['--help'], ['help'], ['-h'], ['org', '--help'], ['key', '--help'], ['app', '--help'], ['app', 'create', '--help'], ['serve', '--help'], ['migrate', '--help'], ['backup', '--help']]
  for (const args of cases) {
    test(`fixloop ${args.join(' ')} exits 0 and prints usage`, async () => {
      const r = await runBinary(args)
      expect(r.code).toBe(0)
      expect(r.stdout).toMatch(/Usage/)
      expect(r.stderr).toBe('')
    })
  }
  test('group help names every command of the contract', async () => {
    expect((await runBinary(['org', '--help'])).stdout).toContain('org create')
    const key = (await runBinary(['key', '--help'])).stdout
    for (const c of ['key create', 'key revoke']) expect(key).toContain(c)
    const app = (await runBinary(['app', '--help'])).stdout
    for (const c of ['app create', 'app update', 'app rotate-secret', 'app delete', '--public-submission', '--allowed-origins', '--processing-mode', '--batch', '--batch-window-hours', '--proof-of-work', '--spam-events', '--spam-retention-days', '--retention-days', '--replay', '--replay-seconds']) {
      expect(app).toContain(c)
    }
  })
})

describe('errors: non-zero exit, message on stderr, nothing on stdout', () => {
  const cases: [string, () => string[], RegExp][] = [
    ['unknown org (key create)', () => ['key', 'create', '--org', '0'.repeat(24)], /unknown org/],
    ['unknown org (app create)', () => ['app', 'create', '--org', 'f'.repeat(24), '--name', 'X'], /unknown org/],
    ['unknown app (update)', () => ['app', 'update', '0'.repeat(24), '--name', 'X'], /unknown app/],
    ['unknown app (rotate-secret)', () => ['app', 'rotate-secret', '0'.repeat(24)], /unknown app/],
    ['unknown app (delete)', () => ['app', 'delete', '0'.repeat(24)], /unknown app/],
    ['unknown key (revoke)', () => ['key', 'revoke', '0'.repeat(24)], /unknown key/],
    ['--public-submission maybe', () => ['app', 'create', '--org', orgId, '--name', 'X', '--public-submission', 'maybe'], /public-submission/],
    ['--processing-mode bogus', () => ['app', 'create', '--org', orgId, '--name', 'X', '--processing-mode', 'bogus'], /processing-mode/],
    ['--batch-window-hours abc', () => ['app', 'create', '--org', orgId, '--name', 'X', '--batch-window-hours', 'abc'], /batch-window-hours/],
    ['--batch-window-hours 0', () => ['app', 'create', '--org', orgId, '--name', 'X', '--batch-window-hours', '0'], /batch-window-hours/],
    ['--proof-of-work hard', () => ['app', 'create', '--org', orgId, '--name', 'X', '--proof-of-work', 'hard'], /proof-of-work/],
    ['--spam-events maybe', () => ['app', 'update', '0'.repeat(24), '--spam-events', 'maybe'], /spam-events/],
    ['--spam-retention-days 3651', () => ['app', 'create', '--org', orgId, '--name', 'X', '--spam-retention-days', '3651'], /spam-retention-days/],
    ['--spam-retention-days -1', () => ['app', 'create', '--org', orgId, '--name', 'X', '--spam-retention-days', '-1'], /spam-retention-days/],
    ['--spam-retention-days x', () => ['app', 'create', '--org', orgId, '--name', 'X', '--spam-retention-days', 'x'], /spam-retention-days/],
    ['--retention-days 3651', () => ['app', 'create', '--org', orgId, '--name', 'X', '--retention-days', '3651'], /retention-days/],
    ['--retention-days -1', () => ['app', 'create', '--org', orgId, '--name', 'X', '--retention-days', '-1'], /retention-days/],
    ['--replay all', () => ['app', 'create', '--org', orgId, '--name', 'X', '--replay', 'all'], /--replay must be one of off, masked, inputs, got "all"/],
    ['--replay-seconds 9', () => ['app', 'create', '--org', orgId, '--name', 'X', '--replay-seconds', '9'], /--replay-seconds must be an integer from 10 to 300/],
    ['--replay-seconds 301', () => ['app', 'update', '0'.repeat(24), '--replay-seconds', '301'], /--replay-seconds must be an integer from 10 to 300/],
    ['--replay-seconds x', () => ['app', 'update', '0'.repeat(24), '--replay-seconds', 'x'], /replay-seconds/],
    ['--batch yes', () => ['app', 'create', '--org', orgId, '--name', 'X', '--batch', 'yes'], /batch/],
    ['--allowed-origins not an origin', () => ['app', 'create', '--org', orgId, '--name', 'X', '--allowed-origins', 'https://a.example/path'], /origin/],
    // A wildcard was stored as given and matched no Origin a browser sends: the widget was refused everywhere.
    ['--allowed-origins with a wildcard', () => ['app', 'create', '--org', orgId, '--name', 'X', '--allowed-origins', 'https://*.example.com'], /wildcards are not supported/],
    ['bad flag on update', () => ['app', 'update', '0'.repeat(24), '--processing-mode', 'bogus'], /processing-mode/],
    ['unknown command', () => ['frobnicate'], /unknown command/],
    ['unknown subcommand', () => ['app', 'frobnicate'], /unknown command/],
    ['unknown subcommand of org', () => ['org', 'delete'], /unknown command/],
    ['unknown flag', () => ['org', 'create', '--name', 'X', '--bogus'], /bogus/],
    ['flag of another command', () => ['org', 'create', '--name', 'X', '--slug', 'x'], /slug/],
    ['unknown flag on serve', () => ['serve', '--bogus'], /bogus/],
    ['missing --name', () => ['org', 'create'], /--name/],
    ['missing --org', () => ['key', 'create'], /--org/],
    ['missing APP_ID', () => ['app', 'rotate-secret'], /APP_ID/],
    ['a flag without its value', () => ['org', 'create', '--name'], /name/],
  ]
  for (const [name, args, message] of cases) {
    test(name, async () => {
      await expectFailure([...args(), '--data-dir', dataDir, '--json'], message)
    })
  }

  test('a duplicate slug is refused', async () => {
    await cliJson(dataDir, ['app', 'create', '--org', orgId, '--name', 'Twin'])
    await expectFailure(['app', 'create', '--org', orgId, '--name', 'Twin', '--data-dir', dataDir], /slug/)
  })

  test('a refused command changes nothing', async () => {
    const before = await cliJson(dataDir, ['app', 'list', '--org', orgId])
    await expectFailure(['app', 'create', '--org', orgId, '--name', 'Never', '--batch-window-hours', 'abc', '--data-dir', dataDir], /batch-window-hours/)
    const after = await cliJson(dataDir, ['app', 'list', '--org', orgId])
    expect(after).toEqual(before)
  })

  test('a group without a subcommand is a usage error on stderr', async () => {
    await expectFailure(['app', '--data-dir', dataDir], /Usage/)
  })
})

describe('the data dir', () => {
  test('FIXLOOP_DATA_DIR works like --data-dir, and the flag wins over it', async () => {
    const viaEnv = freshDir()
    const viaFlag = freshDir()
    const r = await runBinary(['org', 'create', '--name', 'From Env', '--json'], { FIXLOOP_DATA_DIR: viaEnv })
    expect(r.code).toBe(0)
    const org = JSON.parse(r.stdout)
    expect((await cliJson(viaEnv, ['org', 'list'])).data.map((o: any) => o.id)).toEqual([org.id])

    const both = await runBinary(['org', 'create', '--name', 'From Flag', '--json', '--data-dir', viaFlag], { FIXLOOP_DATA_DIR: viaEnv })
    expect(both.code).toBe(0)
    expect((await cliJson(viaFlag, ['org', 'list'])).data.map((o: any) => o.name)).toEqual(['From Flag'])
    expect((await cliJson(viaEnv, ['org', 'list'])).data.map((o: any) => o.name)).toEqual(['From Env'])
  })

  test('the CLI creates a private data dir with master.key mode 0600', async () => {
    const dir = join(freshDir(), 'nested', 'data')
    await cliJson(dir, ['org', 'create', '--name', 'Fresh'])
    expect(statSync(dir).mode & 0o777).toBe(0o700)
    const keyFile = join(dir, 'master.key')
    expect(existsSync(keyFile)).toBe(true)
    expect(statSync(keyFile).mode & 0o777).toBe(0o600)
    expect(readFileSync(keyFile, 'utf8').trim()).toMatch(/^[0-9a-f]{64}$/)
  })

  test('neither the signing secret nor the sk_ key is stored in plaintext', async () => {
    const dir = freshDir()
    const org = await cliJson(dir, ['org', 'create', '--name', 'Secretive'])
    const key = await cliJson(dir, ['key', 'create', '--org', org.id])
    const app = await cliJson(dir, ['app', 'create', '--org', org.id, '--name', 'Vault'])
    const rotated = await cliJson(dir, ['app', 'rotate-secret', app.id])
    const needles: [string, Buffer][] = []
    for (const hex of [app.signingSecret, rotated.signingSecret]) {
      const raw = Buffer.from(hex, 'hex')
      needles.push([`hex ${hex}`, Buffer.from(hex)], [`raw ${hex}`, raw], [`base64 ${hex}`, Buffer.from(raw.toString('base64'))], [`base64url ${hex}`, Buffer.from(raw.toString('base64url'))])
    }
    needles.push(['sk_ key', Buffer.from(key.key)])
    const files = readdirSync(dir).filter((f) => f !== 'master.key')
    expect(files).toContain('fixloop.db')
    // The App itself is there (the check can see rows), only its secrets are not.
    const db = Buffer.concat(files.map((f) => readFileSync(join(dir, f))))
    expect(db.includes(Buffer.from(app.publicKey))).toBe(true)
    expect(needles.filter(([, n]) => db.includes(n)).map(([name]) => name)).toEqual([])
  })
})

describe('a running server sees CLI changes at once', () => {
  let dir: string
  let server: Awaited<ReturnType<typeof spawnServer>>
  let t: { orgId: string; key: string; keyId: string; appId: string; pub: string }

  beforeAll(async () => {
    dir = freshDir()
    const org = await cliJson(dir, ['org', 'create', '--name', 'Live'])
    const key = await cliJson(dir, ['key', 'create', '--org', org.id])
    const app = await cliJson(dir, ['app', 'create', '--org', org.id, '--name', 'Live App'])
    t = { orgId: org.id, key: key.key, keyId: key.id, appId: app.id, pub: app.publicKey }
    server = await spawnServer(dir, { FIXLOOP_RATE_LIMIT_MULTIPLIER: '100' })
  })
  afterAll(() => server?.stop())

  test('key revoke → the next request with that key is 401', async () => {
    const spare = await cliJson(dir, ['key', 'create', '--org', t.orgId])
    expect((await call(server.url, 'GET', '/v1/apps', { auth: spare.key })).status).toBe(200)
    await cliJson(dir, ['key', 'revoke', spare.id])
    const r = await call(server.url, 'GET', '/v1/apps', { auth: spare.key })
    expect(r.status).toBe(401)
    expect(r.body.error.code).toBe('invalid_authorization')
    // Other keys of the Org are untouched.
    expect((await call(server.url, 'GET', '/v1/apps', { auth: t.key })).status).toBe(200)
  })

  test('an App created while the server runs works at once', async () => {
    const app = await cliJson(dir, ['app', 'create', '--org', t.orgId, '--name', 'Late App'])
    expect((await submit(server.url, app.publicKey, { text: 'hello' })).status).toBe(201)
    const apps = await call(server.url, 'GET', '/v1/apps', { auth: t.key })
    expect(apps.body.data.map((a: any) => a.id)).toContain(app.id)
  })

  test('app update --public-submission false → the next public submission is 403 public_disabled', async () => {
    expect((await submit(server.url, t.pub, { text: 'before' })).status).toBe(201)
    await cliJson(dir, ['app', 'update', t.appId, '--public-submission', 'false'])
    const r = await submit(server.url, t.pub, { text: 'after' })
    expect(r.status).toBe(403)
    expect(r.body.error.code).toBe('public_disabled')
    await cliJson(dir, ['app', 'update', t.appId, '--public-submission', 'true'])
    expect((await submit(server.url, t.pub, { text: 'open again' })).status).toBe(201)
  })

  test('app update --allowed-origins → Origin is enforced at once', async () => {
    await cliJson(dir, ['app', 'update', t.appId, '--allowed-origins', 'https://shop.example'])
    const none = await submit(server.url, t.pub, { text: 'no origin' })
    expect(none.status).toBe(403)
    expect(none.body.error.code).toBe('origin_not_allowed')
    expect((await submit(server.url, t.pub, { text: 'right origin' }, { origin: 'https://shop.example' })).status).toBe(201)
    await cliJson(dir, ['app', 'update', t.appId, '--allowed-origins', ''])
    expect((await submit(server.url, t.pub, { text: 'any origin' })).status).toBe(201)
  })

  test('rotate-secret → a token signed with the old secret is 401 at once', async () => {
    const mint = async () => (await call(server.url, 'POST', `/v1/tokens/mint?appId=${t.appId}`, { auth: t.key, body: { sub: 'user-1' } })).body.token as string
    const oldToken = await mint()
    const ok = await submit(server.url, t.pub, { text: 'private' }, { 'x-service-user-token': oldToken })
    expect(ok.status).toBe(201)
    await cliJson(dir, ['app', 'rotate-secret', t.appId])
    const r = await submit(server.url, t.pub, { text: 'private again' }, { 'x-service-user-token': oldToken })
    expect(r.status).toBe(401)
    expect(r.body.error.code).toBe('invalid_user_token')
    expect((await submit(server.url, t.pub, { text: 'new token' }, { 'x-service-user-token': await mint() })).status).toBe(201)
  })

  test('app delete → the public key is 401 unknown_app; stored feedback stays readable', async () => {
    const app = await cliJson(dir, ['app', 'create', '--org', t.orgId, '--name', 'Short Lived'])
    const before = await submit(server.url, app.publicKey, { text: 'last words' })
    expect(before.status).toBe(201)
    await runBinary(['app', 'delete', app.id, '--data-dir', dir]).then((r) => expect(r.code).toBe(0))
    const r = await submit(server.url, app.publicKey, { text: 'too late' })
    expect(r.status).toBe(401)
    expect(r.body.error.code).toBe('unknown_app')
    expect((await call(server.url, 'GET', `/v1/feedback/${before.body.id}`, { auth: t.key })).status).toBe(200)
    // Its reports stay listable by appId, and so do its events: the feed and the stream filtered on the
    // deleted App answered 404 app_not_found, though its reports still move (an archive here) and their
    // events carry its id in the unfiltered feed.
    expect((await call(server.url, 'GET', `/v1/feedback?appId=${app.id}&includeDuplicates=true`, { auth: t.key })).body.data.map((f: { id: string }) => f.id)).toEqual([before.body.id])
    expect((await call(server.url, 'PATCH', `/v1/feedback/${before.body.id}`, { auth: t.key, body: { status: 'archived' } })).status).toBe(200)
    const feed = await call(server.url, 'GET', `/v1/events?appId=${app.id}&limit=500`, { auth: t.key })
    expect(feed.status).toBe(200)
    expect(feed.body.data.every((e: { appId: string }) => e.appId === app.id)).toBe(true)
    expect(feed.body.data.find((e: { type: string; data: { to?: string } }) => e.type === 'feedback.status_changed' && e.data.to === 'archived')?.data.feedbackId).toBe(before.body.id)
    const ctl = new AbortController()
    const stream = await fetch(`${server.url}/v1/events/stream?appId=${app.id}`, { headers: { authorization: `Bearer ${t.key}` }, signal: ctl.signal })
    ctl.abort()
    expect(stream.status).toBe(200)
    // An id never of this Org is still 404.
    expect((await call(server.url, 'GET', `/v1/events?appId=${'ab'.repeat(12)}`, { auth: t.key })).body.error.code).toBe('app_not_found')
  })
})

describe('fixloop serve: a flag wins over its env', () => {
  async function healthy(port: number): Promise<boolean> {
    try {
      return (await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200
    } catch {
      return false
    }
  }

  async function serve(args: string[], env: Record<string, string>, port: number) {
    const proc = Bun.spawn([BINARY, 'serve', '--host', '127.0.0.1', ...args], {
      env: { PATH: process.env.PATH ?? '', FIXLOOP_LOG_LEVEL: 'silent', ...env },
      stdout: 'ignore',
      stderr: 'pipe',
    })
    const deadline = Date.now() + 8000
    while (!(await healthy(port))) {
      if (proc.exitCode !== null || Date.now() > deadline) {
        proc.kill('SIGKILL')
        throw new Error(`fixloop serve not healthy on ${port}: ${await new Response(proc.stderr).text()}`)
      }
      await Bun.sleep(25)
    }
    return proc
  }

  test('--port beats FIXLOOP_PORT and --data-dir beats FIXLOOP_DATA_DIR', async () => {
    const [flagPort, envPort] = [await freePort(), await freePort()]
    const [flagDir, envDir] = [freshDir(), freshDir()]
    const proc = await serve(['--port', String(flagPort), '--data-dir', flagDir], { FIXLOOP_PORT: String(envPort), FIXLOOP_DATA_DIR: envDir }, flagPort)
    try {
      expect(await healthy(envPort)).toBe(false)
      expect(existsSync(join(flagDir, 'fixloop.db'))).toBe(true)
      expect(readdirSync(envDir)).toEqual([])
    } finally {
      proc.kill('SIGTERM')
      expect(await proc.exited).toBe(0)
    }
  }, 15_000)

  test('without flags the env is used', async () => {
    const port = await freePort()
    const dir = freshDir()
    const proc = await serve([], { FIXLOOP_PORT: String(port), FIXLOOP_DATA_DIR: dir }, port)
    try {
      expect(existsSync(join(dir, 'fixloop.db'))).toBe(true)
      expect(statSync(join(dir, 'master.key')).mode & 0o777).toBe(0o600)
    } finally {
      proc.kill('SIGTERM')
      expect(await proc.exited).toBe(0)
    }
  }, 15_000)

  test('a bad --port is refused before starting', async () => {
    await expectFailure(['serve', '--port', 'eighty', '--data-dir', freshDir()], /port/)
  })
})
