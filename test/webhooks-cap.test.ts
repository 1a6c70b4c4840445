/**
 * How many webhook endpoints one Org may have, against the compiled binary. Every dispatcher pass (5 a
 * second) walked every live endpoint of every Org: an Org that made 20,000 of them with its sk_ key (the
 * rate limit lets a key make 36,000 an hour) kept a core busy and slowed every other Org's submissions
 * from 2 ms to 700 ms. A pass now reads only the endpoints behind (test/webhooks-pass.test.ts), but each
 * event is still fanned out to and sent to every matching one: FIXLOOP_WEBHOOKS_PER_ORG (default 100)
 * bounds them, for the API and the CLI alike. Each event is posted to every Slack connection too, from
 * this server's address: FIXLOOP_SLACK_CONNECTIONS_PER_ORG (default 20) bounds those.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { call, runBinary, spawnServer, tempDir } from './harness'
import { TEST_DIALECT, clusterEnv } from './cluster-env'

let dir: string
let env: Record<string, string> = {}
let server: Awaited<ReturnType<typeof spawnServer>>
const a = { orgId: '', key: '' }
const b = { orgId: '', key: '' }

async function cli(...args: string[]) {
  return runBinary([...args, '--data-dir', dir, '--json'], env)
}

beforeAll(async () => {
  dir = tempDir('fixloop-webhooks-cap-')
  if (TEST_DIALECT === 'pg') env = await clusterEnv()
  env = { ...env, FIXLOOP_WEBHOOKS_PER_ORG: '3', FIXLOOP_SLACK_CONNECTIONS_PER_ORG: '2', FIXLOOP_SLACK_API_URL: 'http://127.0.0.1:9/api' }
  for (const t of [a, b]) {
    t.orgId = JSON.parse((await cli('org', 'create', '--name', 'Hooks')).stdout).id
    t.key = JSON.parse((await cli('key', 'create', '--org', t.orgId)).stdout).key
  }
  server = await spawnServer(dir, env)
}, 60_000)

afterAll(async () => {
  await server?.stop()
  rmSync(dir, { recursive: true, force: true })
})

const create = (key: string, n: number) => call(server.url, 'POST', '/v1/webhooks', { auth: key, body: { url: `https://93.184.216.34/hook/${n}` } })

describe('webhook endpoints per Org', () => {
  test('the API makes at most FIXLOOP_WEBHOOKS_PER_ORG; one more is 400 invalid_argument naming the setting; another Org is not counted', async () => {
    const ids: string[] = []
    for (let i = 0; i < 3; i++) {
      const r = await create(a.key, i)
      expect(r.status).toBe(201)
      ids.push(r.body.id)
    }
    const over = await create(a.key, 3)
    expect(over.status).toBe(400)
    expect(over.body.error.code).toBe('invalid_argument')
    expect(over.body.error.details).toEqual({ limit: 'FIXLOOP_WEBHOOKS_PER_ORG', max: 3 })
    expect((await call(server.url, 'GET', '/v1/webhooks', { auth: a.key })).body.data).toHaveLength(3)
    // Another Org has its own allowance.
    expect((await create(b.key, 0)).status).toBe(201)
    // A deleted endpoint frees its place.
    expect((await call(server.url, 'DELETE', `/v1/webhooks/${ids[0]}`, { auth: a.key })).status).toBe(200)
    expect((await create(a.key, 4)).status).toBe(201)
  })

  test('the CLI is held to the same number', async () => {
    const r = await cli('webhook', 'create', '--org', a.orgId, '--url', 'https://93.184.216.34/hook/cli')
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('FIXLOOP_WEBHOOKS_PER_ORG')
  })
})

describe('Slack connections per Org', () => {
  const connect = (key: string, channel: string) =>
    call(server.url, 'POST', '/v1/chatops/slack', { auth: key, body: { botToken: 'xoxb-1234567890-abcdefghij', signingSecret: 'a'.repeat(32), channel } })

  test('the API connects at most FIXLOOP_SLACK_CONNECTIONS_PER_ORG; one more is 400 invalid_argument naming the setting; another Org is not counted', async () => {
    expect((await connect(a.key, 'C0AAAA001')).status).toBe(201)
    expect((await connect(a.key, 'C0AAAA002')).status).toBe(201)
    const over = await connect(a.key, 'C0AAAA003')
    expect(over.status).toBe(400)
    expect(over.body.error.code).toBe('invalid_argument')
    expect(over.body.error.details).toEqual({ limit: 'FIXLOOP_SLACK_CONNECTIONS_PER_ORG', max: 2 })
    expect((await call(server.url, 'GET', '/v1/chatops/slack', { auth: a.key })).body.data).toHaveLength(2)
    expect((await connect(b.key, 'C0BBBB001')).status).toBe(201)
  })
})
