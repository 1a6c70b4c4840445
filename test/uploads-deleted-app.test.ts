/**
 * Upload URLs of a deleted App, against the compiled binary. Deleting an App is how an operator stops an
 * abused public key (`unknown_app` at once on every widget route), but an embedded-store upload URL
 * issued before stayed good for its 15 minutes: objects kept landing in the App's blob folder. Now such
 * a PUT is `401 unknown_app` and stores nothing; reports already made stay readable, downloads included.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { call, runBinary, spawnServer, tempDir } from './harness'
import { TEST_DIALECT } from './cluster-env'

let dir: string
let server: Awaited<ReturnType<typeof spawnServer>>
const t = { orgId: '', key: '', appId: '', pub: '' }

async function cli(...args: string[]) {
  const r = await runBinary([...args, '--data-dir', dir, '--json'])
  if (r.code !== 0) throw new Error(r.stderr)
  return r.stdout.trim() ? JSON.parse(r.stdout) : null
}

// The embedded store is the SQLite mode's (cluster mode keeps blobs in S3, whose presigned URLs fixloop never sees).
const embeddedOnly = TEST_DIALECT === 'pg' ? test.skip : test

beforeAll(async () => {
  dir = tempDir('fixloop-uploads-deleted-')
  t.orgId = (await cli('org', 'create', '--name', 'Uploads')).id
  t.key = (await cli('key', 'create', '--org', t.orgId)).key
  const app = await cli('app', 'create', '--org', t.orgId, '--name', 'Doomed')
  Object.assign(t, { appId: app.id, pub: app.publicKey })
  server = await spawnServer(dir)
}, 60_000)

afterAll(async () => {
  await server?.stop()
  rmSync(dir, { recursive: true, force: true })
})

const issue = async () => (await call(server.url, 'POST', '/v1/feedback/upload-url', { auth: t.pub, body: { contentType: 'text/plain', byteSize: 5, kind: 'attachment' } })).body
const put = (url: string) => fetch(url, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'hello' })

describe('upload URLs of a deleted App', () => {
  embeddedOnly('a PUT after the App was deleted is 401 unknown_app and stores nothing; the report made before stays downloadable', async () => {
    const used = await issue()
    const spare = await issue()
    expect((await put(used.url)).status).toBe(200)
    const report = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'with a file', attachments: [{ key: used.key, kind: 'attachment', contentType: 'text/plain', byteSize: 5 }] } })
    expect(report.status).toBe(201)
    await cli('app', 'delete', t.appId)
    const late = await put(spare.url)
    expect(late.status).toBe(401)
    expect(((await late.json()) as any).error.code).toBe('unknown_app')
    const folder = join(dir, 'blobs', t.appId)
    const stored = existsSync(folder) ? readdirSync(folder, { recursive: true }).map(String) : []
    expect(stored.some((f) => f.includes(spare.key.split('/')[1]))).toBe(false)
    // Stored feedback of a deleted App stays readable, its files too.
    const item = await call(server.url, 'GET', `/v1/feedback/${report.body.id}`, { auth: t.key })
    expect(item.status).toBe(200)
    expect(await (await fetch(item.body.attachments[0].url)).text()).toBe('hello')
  })
})
