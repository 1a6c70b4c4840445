/**
 * The signature-verification snippets of docs/events.md work: the Node and Python ones are extracted
 * from the document and run against a real signed delivery (Go is not installed here; its snippet
 * mirrors the same steps). A tampered body or a wrong secret must fail.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT, call, eventually, seedTenant, startTestServer, tempDir, type TestServer } from './harness'
import { Receiver } from './webhook-receiver'

const doc = readFileSync(join(ROOT, 'docs', 'events.md'), 'utf8')
const snippet = (lang: string) => {
  const m = new RegExp('```' + lang + '\\n([\\s\\S]*?)```').exec(doc)
  if (!m) throw new Error(`no ${lang} snippet in docs/events.md`)
  return m[1]
}

let srv: TestServer
let rx: Receiver
let delivery: { secret: string; headers: Record<string, string>; body: string }
beforeAll(async () => {
  srv = await startTestServer({ FIXLOOP_WEBHOOK_ALLOW_PRIVATE: '1' })
  rx = new Receiver()
  const t = await seedTenant(srv.admin)
  const w = await call(srv.url, 'POST', '/v1/webhooks', { auth: t.key, body: { url: rx.url + '/ok/docs' } })
  await call(srv.url, 'POST', `/v1/webhooks/${w.body.id}/rotate-secret`, { auth: t.key })
  await call(srv.url, 'POST', `/v1/webhooks/${w.body.id}/test`, { auth: t.key })
  const got = await eventually(() => rx.at('/ok/docs')[0])
  // Verified with the previous secret: the second of the two signatures must be found too.
  delivery = { secret: w.body.secret, headers: { 'webhook-id': got.id, 'webhook-timestamp': got.timestamp, 'webhook-signature': got.signature }, body: got.body }
})
afterAll(async () => {
  await srv.close()
  rx.stop()
})

describe('docs/events.md verification snippets', () => {
  test('Node', async () => {
    const dir = tempDir()
    writeFileSync(join(dir, 'verify.mjs'), snippet('js'))
    writeFileSync(
      join(dir, 'run.mjs'),
      `import { verify } from './verify.mjs'
const d = JSON.parse(process.argv[2])
console.log(JSON.stringify([verify(d.secret, d.headers, d.body), verify(d.secret, d.headers, d.body + ' '), verify('whsec_' + Buffer.alloc(32).toString('base64'), d.headers, d.body)]))`,
    )
    const r = Bun.spawnSync(['node', join(dir, 'run.mjs'), JSON.stringify(delivery)])
    expect(r.stderr.toString()).toBe('')
    expect(JSON.parse(r.stdout.toString())).toEqual([true, false, false])
  })

  test('the typed client (@fixloop/client verifyWebhook) accepts the delivery and refuses a tampered one', async () => {
    const { verifyWebhook } = await import('../packages/client/src/index')
    const event = await verifyWebhook(delivery.body, delivery.headers, delivery.secret)
    expect(event).toMatchObject({ type: 'webhook.test', id: delivery.headers['webhook-id'] })
    expect(await verifyWebhook(delivery.body + ' ', delivery.headers, delivery.secret).then(() => 'accepted', () => 'refused')).toBe('refused')
  })

  test('Python', async () => {
    const dir = tempDir()
    writeFileSync(
      join(dir, 'run.py'),
      `${snippet('python')}
import json, sys
d = json.loads(sys.argv[1])
b = d["body"].encode()
print(json.dumps([verify(d["secret"], d["headers"], b), verify(d["secret"], d["headers"], b + b" "), verify("whsec_" + "A" * 44, d["headers"], b)]))`,
    )
    const r = Bun.spawnSync(['python3', join(dir, 'run.py'), JSON.stringify(delivery)])
    expect(r.stderr.toString()).toBe('')
    expect(JSON.parse(r.stdout.toString())).toEqual([true, false, false])
  })
})
