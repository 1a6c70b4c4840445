/**
 * Sanitizing end to end, through the real server and worker: a report full of secrets and PII in every
 * free-text place is submitted; once it reaches awaiting_manual, none of the planted values is in the
 * API response, in the feedback row, in the jobs table, or anywhere in the bytes of the database file
 * and its WAL after a checkpoint. The submitter's own identity stays in `submittedBy` only.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { call, eventually, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'
import { B64, B64URL, T, prng, randomString } from './sanitize-fixtures'
import { sqliteOf } from './sqlite-of'

/**
 * A TRUNCATE checkpoint that completed. It answers busy while another connection of the server (the
 * checkpointer thread's own checkpoint, a processing-thread read) holds the WAL for a moment, which a
 * loaded machine makes likely: try again until it completes, since what the tests read is the files after one.
 */
async function checkpointFully(server: TestServer): Promise<void> {
  await eventually(() => (sqliteOf(server.ctx).query('PRAGMA wal_checkpoint(TRUNCATE)').get() as { busy: number }).busy === 0, 10_000)
}

const rng = prng(0xfeed)
const rand = (alphabet: string, n: number) => randomString(rng, alphabet, n)

const IDENTITY = { email: 'jane.doe@example.com', name: 'Jane Doe', externalUserId: 'cust_7Hq2x9' }
/** The identity as it may be echoed in free text (also percent-encoded in the URL). */
const ECHOES = [IDENTITY.email, 'jane.doe%40example.com', IDENTITY.name, IDENTITY.externalUserId]

/** Planted values that must not survive anywhere. */
const S = {
  card: '5555 5555 5555 4444',
  iban: 'GB82 WEST 1234 5698 7654 32',
  phone: '+44 20 7946 0958',
  ssn: '123-45-6789',
  otherEmail: 'bob.smith@corp.example',
  ipv4: '203.0.113.42',
  ipv6: '2001:db8:85a3::8a2e:370:7334',
  aws: T.awsId1,
  github: T.ghp,
  session: rand(B64URL, 40),
  oauthCode: '4/0Af' + rand(B64URL, 30),
  jwt: T.jwt1,
  stripe: T.stripeLive,
  bearer: rand(B64URL, 32),
  cookie: 's%3A' + rand(B64URL, 30),
  pem1: rand(B64, 64),
  pem2: rand(B64, 44),
  password: 'Winter-' + rand(B64URL, 12),
  apiKey: 'k_' + rand(B64URL, 24),
  homeUser: 'janedoe',
  fixloop: T.fixloop1,
}
/** The home-folder account name is short and could occur by chance in binary pages; checked in text only. */
const SECRETS = Object.entries(S).filter(([k]) => k !== 'homeUser').map(([, v]) => v)

const TS = 1732198765432
const BODY = {
  text:
    `Checkout broke for me (Jane Doe, ${IDENTITY.email}, id ${IDENTITY.externalUserId}). My card ${S.card} was charged twice; ` +
    `refund to IBAN ${S.iban} or call ${S.phone}. Pasted env: AWS_ACCESS_KEY_ID=${S.aws} and GITHUB_TOKEN=${S.github}. ` +
    `SSN ${S.ssn}. My colleague ${S.otherEmail} saw it from ${S.ipv4}. The password field is fine; version 1.2.3.4.`,
  url: `https://shop.example.com/account/jane.doe%40example.com/orders?session=${S.session}&code=${encodeURIComponent(S.oauthCode)}&ref=home#access_token=${S.jwt}&token_type=Bearer`,
  userAgent: `Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 ShopApp/3.2 (key ${S.stripe})`,
  consoleLogs: [
    { level: 'error', message: `POST /api/pay 401 Authorization: Bearer ${S.bearer}`, ts: TS },
    { level: 'warn', message: `Set-Cookie: sid=${S.cookie}; Path=/; HttpOnly`, ts: TS + 1 },
    { level: 'log', message: `loaded key -----BEGIN PRIVATE KEY-----\n${S.pem1}\n${S.pem2}\n-----END PRIVATE KEY-----`, ts: TS + 2 },
    { level: 'info', message: `peer ${S.ipv6} connected`, ts: TS + 3 },
  ],
  metadata: { plan: 'pro', password: S.password, nested: { apiKey: S.apiKey, contact: S.otherEmail }, build: '1.2.3.4', home: `/Users/${S.homeUser}/Library` },
  componentTarget: {
    name: `PaymentForm (${IDENTITY.email})`,
    meta: { file: `/home/${S.homeUser}/shop/src/PaymentForm.tsx`, testId: 'pay-form', token: S.fixloop },
    bbox: { x: 10, y: 20, w: 300, h: 120 },
  },
  identity: IDENTITY,
}

/** What each rule should have replaced, counted by hand from BODY. */
const EXPECTED_REDACTIONS = {
  submitter_name: 1,
  submitter_email: 3, // text, url path, component name
  submitter_id: 1,
  credit_card: 1,
  iban: 1,
  phone: 1,
  aws_access_key_id: 1,
  github_token: 1,
  ssn: 1,
  email: 2, // text, metadata.nested.contact
  ipv4: 1,
  ipv6: 1,
  secret: 7, // url session, code, access_token; Set-Cookie line; metadata password, apiKey; component meta token
  stripe_key: 1,
  bearer_token: 1,
  private_key: 1,
  username: 2, // metadata home, component meta file
}

let srv: TestServer
let t: Tenant
let id: string
let item: any
let itemText: string

beforeAll(async () => {
  srv = await startTestServer({ FIXLOOP_RATE_LIMIT_MULTIPLIER: '1000' })
  t = await seedTenant(srv.admin)
  const r = await call(srv.url, 'POST', '/v1/feedback', { auth: t.pub, body: BODY })
  expect(r.status).toBe(201)
  id = r.body.id
  const done = await eventually(async () => {
    const g = await call(srv.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })
    return g.status === 200 && g.body.status === 'awaiting_manual' ? g : undefined
  })
  item = done.body
  itemText = done.text
})
afterAll(() => srv.close())

describe('a report full of secrets, through the worker', () => {
  test('GET shows none of the planted values, anywhere in the response', () => {
    for (const s of [...SECRETS, S.homeUser]) expect(itemText, s).not.toContain(s)
    // JSON escapes newlines, so check the PEM lines inside the parsed messages as well.
    expect(JSON.stringify(item.consoleLogs)).not.toContain(S.pem1)
  })

  test("the submitter's identity stays in submittedBy and is gone from every free-text field", () => {
    expect(item.submittedBy).toEqual({ mode: 'public', email: IDENTITY.email, name: IDENTITY.name, externalUserId: IDENTITY.externalUserId })
    const freeText = JSON.stringify([item.text, item.url, item.userAgent, item.consoleLogs, item.submissionMeta, item.componentTarget])
    for (const e of ECHOES) expect(freeText, e).not.toContain(e)
  })

  test('redactions counts every replacement by rule', () => {
    expect(item.redactions).toEqual(EXPECTED_REDACTIONS)
  })

  test('each field keeps its shape and its harmless content', () => {
    expect(item.text).toContain('[REDACTED:credit_card]')
    expect(item.text).toContain('The password field is fine; version 1.2.3.4.')
    expect(URL.canParse(item.url)).toBe(true)
    const url = new URL(item.url)
    expect(url.host).toBe('shop.example.com')
    expect(url.pathname).toBe('/account/%5BREDACTED%3Asubmitter_email%5D/orders')
    expect(url.searchParams.get('session')).toBe('[REDACTED:secret]')
    expect(url.searchParams.get('ref')).toBe('home')
    expect(url.hash).toBe('#access_token=%5BREDACTED%3Asecret%5D&token_type=Bearer')
    expect(item.userAgent).toBe(
      'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 ShopApp/3.2 (key [REDACTED:stripe_key])',
    )
    expect(item.consoleLogs.map((e: any) => [e.level, e.ts])).toEqual(BODY.consoleLogs.map((e) => [e.level, e.ts]))
    expect(item.consoleLogs[2].message).toBe('loaded key [REDACTED:private_key]')
    expect(item.submissionMeta).toEqual({
      plan: 'pro',
      password: '[REDACTED:secret]',
      nested: { apiKey: '[REDACTED:secret]', contact: '[REDACTED:email]' },
      build: '1.2.3.4',
      home: '/Users/[REDACTED:username]/Library',
    })
    expect(item.componentTarget).toEqual({
      name: 'PaymentForm ([REDACTED:submitter_email])',
      meta: { file: '/home/[REDACTED:username]/shop/src/PaymentForm.tsx', testId: 'pay-form', token: '[REDACTED:secret]' },
      bbox: { x: 10, y: 20, w: 300, h: 120 },
    })
  })

  test('the feedback row and the jobs table hold no planted value', () => {
    const row = sqliteOf(srv.ctx).query('SELECT * FROM feedback WHERE id = ?').get(id) as Record<string, unknown>
    const freeText = JSON.stringify([row.text, row.url, row.user_agent, row.console_logs, row.metadata, row.component_target, row.redactions])
    for (const s of [...SECRETS, S.homeUser, ...ECHOES]) expect(freeText, s).not.toContain(s)
    const whole = JSON.stringify(row)
    for (const s of SECRETS) expect(whole, s).not.toContain(s)
    const jobs = JSON.stringify(sqliteOf(srv.ctx).query('SELECT * FROM jobs').all())
    for (const s of SECRETS) expect(jobs, s).not.toContain(s)
    expect(sqliteOf(srv.ctx).query('SELECT COUNT(*) AS n FROM jobs WHERE feedback_id = ?').get(id)).toEqual({ n: 0 })
  })

  test('after a checkpoint, neither the database file nor the WAL holds a planted value', async () => {
    await checkpointFully(srv)
    const files = ['fixloop.db', 'fixloop.db-wal'].map((f) => join(srv.dataDir, f)).filter((f) => existsSync(f))
    expect(files.length).toBeGreaterThanOrEqual(1)
    for (const file of files) {
      const bytes = readFileSync(file)
      for (const s of SECRETS) expect(bytes.indexOf(Buffer.from(s, 'utf8')), `${s} in ${file}`).toBe(-1)
      // The raw text as first inserted (identity echo included) must not linger in freed page space.
      expect(bytes.indexOf(Buffer.from(`(Jane Doe, ${IDENTITY.email}`, 'utf8')), `raw text in ${file}`).toBe(-1)
    }
  })
})

describe('many reports of different sizes', () => {
  test('rewritten rows leave nothing in freed page space (secure_delete)', async () => {
    // Rows of varied sizes are rewritten several times on their way to awaiting_manual; without
    // secure_delete a few old cells survive in page free space or freed overflow pages.
    const planted: string[] = []
    const ids: string[] = []
    for (let i = 0; i < 30; i++) {
      const email = `alpha${i}.x@example.org`
      const password = `pw-${rand(B64URL, 16)}`
      const contact = `beta${i}.y@example.org`
      planted.push(email, password, contact)
      const pad = 'lorem ipsum '.repeat((i * 17) % 600)
      const r = await call(srv.url, 'POST', '/v1/feedback', {
        auth: t.pub,
        body: { text: `${email} ${pad} password=${password} end`, metadata: { note: `${'x'.repeat((i * 31) % 900)} ${contact}` } },
      })
      expect(r.status).toBe(201)
      ids.push(r.body.id)
    }
    // Similar texts may be clustered as duplicates (which stay `sanitized`): wait for sanitizing to end.
    const marks = ids.map(() => '?').join(',')
    const pending = sqliteOf(srv.ctx).query(
      `SELECT (SELECT COUNT(*) FROM feedback WHERE id IN (${marks}) AND status IN ('received', 'sanitizing'))
            + (SELECT COUNT(*) FROM jobs WHERE feedback_id IN (${marks})) AS n`,
    )
    await eventually(() => (pending.get(...ids, ...ids) as { n: number }).n === 0, 20_000)
    await checkpointFully(srv)
    for (const file of ['fixloop.db', 'fixloop.db-wal'].map((f) => join(srv.dataDir, f)).filter((f) => existsSync(f))) {
      const bytes = readFileSync(file)
      const found = planted.filter((p) => bytes.indexOf(Buffer.from(p, 'utf8')) !== -1)
      expect(found, file).toEqual([])
    }
  }, 30_000)
})

describe('before the worker has run', () => {
  test('a received report is served sanitized, never raw, and the worker then stores the same text', async () => {
    const paused = await startTestServer({}, { worker: { autoStart: false } })
    try {
      const p = await seedTenant(paused.admin)
      const body = { text: `my key ${S.aws}, mail ${S.otherEmail}, I am ${IDENTITY.name}`, url: `https://x.example.com/?token=${S.session}`, identity: IDENTITY }
      const r = await call(paused.url, 'POST', '/v1/feedback', { auth: p.pub, body })
      expect(r.status).toBe(201)
      const shown = await call(paused.url, 'GET', `/v1/feedback/${r.body.id}`, { auth: p.key })
      const listed = await call(paused.url, 'GET', '/v1/feedback', { auth: p.key })
      expect(shown.body.status).toBe('received')
      for (const s of [S.aws, S.otherEmail, S.session]) {
        expect(shown.text).not.toContain(s)
        expect(listed.text).not.toContain(s)
      }
      expect(shown.body.text).toBe('my key [REDACTED:aws_access_key_id], mail [REDACTED:email], I am [REDACTED:submitter_name]')
      await paused.worker.tick()
      const stored = await call(paused.url, 'GET', `/v1/feedback/${r.body.id}`, { auth: p.key })
      expect(stored.body.status).toBe('awaiting_manual')
      expect([stored.body.text, stored.body.url]).toEqual([shown.body.text, shown.body.url])
    } finally {
      await paused.close()
    }
  })
})
