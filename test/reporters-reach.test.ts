/**
 * Every reporter a report names can be exported and erased (found by attacking the API): a report
 * accepted with `identity.email` "JÖRG@EXAMPLE.DE" was found by neither that address nor "jörg@…" on
 * SQLite (the query was lowered by JavaScript, the column by SQLite's ASCII-only LOWER), one with a
 * 256-character `externalUserId` (the length a token's sub and identity take) was refused as over 255,
 * and one with `identity.email` "Jane Roe <jane@example.com>" was refused by an address pattern without
 * spaces. Each answered 400 or `{"erased": 0}` while the report stayed. Runs on PostgreSQL too.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, seedTenant, startTestServer, type Tenant, type TestServer } from './harness'

let server: TestServer
let t: Tenant
beforeAll(async () => {
  server = await startTestServer()
  t = await seedTenant(server.admin)
})
afterAll(() => server.close())

async function submit(identity: Record<string, string>): Promise<string> {
  const r = await call(server.url, 'POST', '/v1/feedback', { auth: t.pub, body: { text: 'The export button does nothing', identity } })
  expect(r.status).toBe(201)
  return r.body.id
}
const exported = async (query: string) => {
  const r = await call(server.url, 'GET', `/v1/reporters/feedback?${query}`, { auth: t.key })
  expect(r.status, r.text).toBe(200)
  return r.body.data.map((f: { id: string }) => f.id)
}
const erase = (body: Record<string, string>) => call(server.url, 'POST', '/v1/reporters/erase', { auth: t.key, body })
const stored = async (id: string) => (await call(server.url, 'GET', `/v1/feedback/${id}`, { auth: t.key })).status

describe('every reporter a report names is reachable', () => {
  test('a non-ASCII address in capitals: found by itself and in lower case, then erased', async () => {
    const id = await submit({ email: 'JÖRG@EXAMPLE.DE' })
    expect(await exported(`email=${encodeURIComponent('JÖRG@EXAMPLE.DE')}`)).toEqual([id])
    // Its ASCII letters in another case too (and, below, its other letters).
    expect(await exported(`email=${encodeURIComponent('jÖrg@Example.de')}`)).toEqual([id])
    const r = await erase({ email: 'JÖRG@EXAMPLE.DE' })
    expect(r.body).toEqual({ erased: 1 })
    expect(await stored(id)).toBe(404)
  })

  test('a non-ASCII address in any case, on both dialects: every spelling exported (paged) and erased, a look-alike kept', async () => {
    const spellings = ['MAËLLE@EXAMPLE.FR', 'maëlle@example.fr', 'Maëlle@Example.Fr']
    const ids: string[] = []
    // A look-alike between each (same length, another letter where ë is: the database's wildcard finds it,
    // the fold must not keep it), so pages of one are narrowed more than once.
    const decoys: string[] = []
    for (const email of spellings) {
      ids.push(await submit({ email }))
      decoys.push(await submit({ email: 'maälle@example.fr' }))
    }
    const newestFirst = [...ids].reverse()
    expect(await exported(`email=${encodeURIComponent('maëlle@EXAMPLE.fr')}`)).toEqual(newestFirst)
    // One report a page: every page holds one of them, never a look-alike, and the cursor goes on past them.
    const paged: string[] = []
    let cursor = ''
    for (let page = 0; page < 5; page++) {
      const r = await call(server.url, 'GET', `/v1/reporters/feedback?email=${encodeURIComponent('MAËLLE@example.fr')}&limit=1${cursor ? `&cursor=${cursor}` : ''}`, { auth: t.key })
      expect(r.status).toBe(200)
      paged.push(...r.body.data.map((f: { id: string }) => f.id))
      if (!r.body.nextCursor) break
      cursor = r.body.nextCursor
    }
    expect(paged).toEqual(newestFirst)
    expect((await erase({ email: 'maëlle@example.fr' })).body).toEqual({ erased: 3 })
    for (const id of ids) expect(await stored(id)).toBe(404)
    for (const id of decoys) expect(await stored(id)).toBe(200)
    // LIKE's own characters in an address are matched as themselves.
    const literal = await submit({ email: 'ö_%@example.de' })
    const other = await submit({ email: 'öab@example.de' })
    expect(await exported(`email=${encodeURIComponent('Ö_%@EXAMPLE.DE')}`)).toEqual([literal])
    expect(await stored(other)).toBe(200)
  })

  test('an ASCII address is still compared without case', async () => {
    const id = await submit({ email: 'Case.Folded@Example.com' })
    expect(await exported('email=case.folded%40example.COM')).toEqual([id])
  })

  test('an externalUserId of 256 characters (the most a token sub or identity carries)', async () => {
    const uid = 'v'.repeat(256)
    const id = await submit({ externalUserId: uid })
    expect(await exported(`externalUserId=${uid}`)).toEqual([id])
    expect((await erase({ externalUserId: uid })).body).toEqual({ erased: 1 })
    expect(await stored(id)).toBe(404)
    // One more is what no report can carry.
    expect((await erase({ externalUserId: 'v'.repeat(257) })).status).toBe(400)
  })

  test('an address written with a display name', async () => {
    const email = 'Jane Roe <jane@example.com>'
    const id = await submit({ email })
    expect(await exported(`email=${encodeURIComponent(email)}`)).toEqual([id])
    expect((await erase({ email })).body).toEqual({ erased: 1 })
    expect(await stored(id)).toBe(404)
  })
})
