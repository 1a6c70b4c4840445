/**
 * The administration services (tenants, repository connections) the CLI and the admin dashboard call:
 * one error type for both. Every failure is an ApiError with a 4xx code from the code table (so a route
 * would send the right status, never a 500); another Org's App or key is "not found" and is left
 * untouched; the compiled CLI turns a 4xx code into exit 2 with the message on stderr.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { ApiError, ERROR_STATUS } from '../src/core/errors'
import { runBinary, seedTenant, startTestServer, tempDir, type Tenant, type TestServer } from './harness'
import { cliJson, ensureBinary } from './helpers-lifecycle'
import { createAdminsService } from '../src/modules/admins/service'
import { passwordHasher } from '../src/modules/admins/password-hash'

let srv: TestServer
let a: Tenant
let b: Tenant

beforeAll(async () => {
  srv = await startTestServer()
  a = await seedTenant(srv.admin, {}, 'Alpha')
  b = await seedTenant(srv.admin, {}, 'Beta')
})
afterAll(() => srv.close())

async function failure(fn: () => unknown): Promise<{ code: string; status: number; message: string }> {
  try {
    await fn()
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError)
    const err = e as ApiError
    // The status always comes from the one code table.
    expect(err.status).toBe(ERROR_STATUS[err.code])
    return { code: err.code, status: err.status, message: err.message }
  }
  throw new Error('expected an ApiError')
}

const GHOST = '0'.repeat(24)

describe('tenants service', () => {
  test('another Org\'s App: app_not_found (404), and the App is unchanged', async () => {
    const before = await srv.admin.listApps(b.orgId)
    expect(await failure(() => srv.admin.updateApp(a.orgId, b.appId, { name: 'Stolen' }))).toEqual({ code: 'app_not_found', status: 404, message: `unknown app: ${b.appId}` })
    expect((await failure(() => srv.admin.rotateSecret(a.orgId, b.appId))).code).toBe('app_not_found')
    expect((await failure(() => srv.admin.deleteApp(a.orgId, b.appId))).code).toBe('app_not_found')
    expect(await srv.admin.listApps(b.orgId)).toEqual(before)
  })

  test('another Org\'s key: key_not_found (404), and the key still works', async () => {
    expect(await failure(() => srv.admin.revokeKey(a.orgId, b.keyId))).toEqual({ code: 'key_not_found', status: 404, message: `unknown key: ${b.keyId}` })
    expect((await srv.admin.listKeys(b.orgId)).find((k) => k.id === b.keyId)?.revokedAt).toBeNull()
  })

  test('an unknown Org: org_not_found (404)', async () => {
    expect(await failure(() => srv.admin.createKey(GHOST, 'x'))).toEqual({ code: 'org_not_found', status: 404, message: `unknown org: ${GHOST}` })
    expect((await failure(() => srv.admin.createApp(GHOST, { name: 'X' }))).code).toBe('org_not_found')
    expect((await failure(() => srv.admin.listApps(GHOST))).code).toBe('org_not_found')
  })

  test('bad settings: invalid_argument (400); a slug in use: slug_taken (409)', async () => {
    expect(await failure(() => srv.admin.createApp(a.orgId, { name: ' ' }))).toMatchObject({ code: 'invalid_argument', status: 400 })
    expect(await failure(() => srv.admin.updateApp(a.orgId, a.appId, { slug: 'Not A Slug' }))).toMatchObject({ code: 'invalid_argument', status: 400 })
    expect((await failure(() => srv.admin.updateApp(a.orgId, a.appId, { allowedOrigins: ['https://a.example/path'] }))).message).toContain('not an origin')
    await srv.admin.createApp(a.orgId, { name: 'Taken', slug: 'taken' })
    expect(await failure(() => srv.admin.createApp(a.orgId, { name: 'Again', slug: 'taken' }))).toMatchObject({ code: 'slug_taken', status: 409 })
    // The same slug in another Org is fine: slugs are per Org.
    expect((await srv.admin.createApp(b.orgId, { name: 'Taken too', slug: 'taken' })).slug).toBe('taken')
  })

  test('Apps named without a letter a-z (Cyrillic, Chinese, Arabic) get app, app-2, app-3 in an Org; a slug asked for is still refused when taken', async () => {
    const org = await srv.admin.createOrg('Магазин')
    expect((await srv.admin.createApp(org.id, { name: 'Доставка' })).slug).toBe('app')
    expect((await srv.admin.createApp(org.id, { name: '配送' })).slug).toBe('app-2')
    expect((await srv.admin.createApp(org.id, { name: 'المتجر' })).slug).toBe('app-3')
    expect(await failure(() => srv.admin.createApp(org.id, { name: 'Склад', slug: 'app-2' }))).toMatchObject({ code: 'slug_taken', status: 409 })
    // A Latin name keeps its own slug, and a second of it is still told apart by --slug.
    expect((await srv.admin.createApp(org.id, { name: 'Shop' })).slug).toBe('shop')
    expect(await failure(() => srv.admin.createApp(org.id, { name: 'Shop' }))).toMatchObject({ code: 'slug_taken', status: 409 })
  })

  test('the Org of a bare id (the operator\'s lookups)', async () => {
    expect(await srv.admin.orgOfApp(b.appId)).toBe(b.orgId)
    expect(await srv.admin.orgOfKey(a.keyId)).toBe(a.orgId)
    expect((await failure(() => srv.admin.orgOfApp(GHOST))).code).toBe('app_not_found')
    expect((await failure(() => srv.admin.orgOfKey(GHOST))).code).toBe('key_not_found')
  })
})

describe('connections service', () => {
  test('another Org\'s App: app_not_found, nothing stored', async () => {
    const connections = srv.services.connections
    expect((await failure(() => connections.connect(a.orgId, b.appId, { gitUrl: 'https://git.example/acme/shop.git' }))).code).toBe('app_not_found')
    expect((await failure(() => connections.disconnect(a.orgId, b.appId))).code).toBe('app_not_found')
    expect((await failure(() => connections.get(a.orgId, b.appId))).code).toBe('app_not_found')
    expect(await connections.load(b.appId)).toBeNull()
    expect(await connections.get(b.orgId, b.appId)).toBeNull()
  })

  test('bad input: invalid_argument with the flag named', async () => {
    const connections = srv.services.connections
    expect(await failure(() => connections.connect(a.orgId, a.appId, { gitUrl: 'not a url' }))).toMatchObject({ code: 'invalid_argument', status: 400 })
    expect((await failure(() => connections.connect(a.orgId, a.appId, { gitUrl: 'https://git.example/a/b.git', timeoutSeconds: -1 }))).message).toContain('--timeout-seconds')
    expect(await connections.load(a.appId)).toBeNull()
  })

  test('get: the stored connection without its token', async () => {
    const connections = srv.services.connections
    const token = 'ghp_' + 'N4tReAlLyAtOkEnN4tReAlLyAtOkEn123456'
    const stored = await connections.connect(b.orgId, b.appId, { gitUrl: 'https://git.example/beta/shop.git', host: 'github', hostToken: token })
    const read = await connections.get(b.orgId, b.appId)
    // The git-host webhook secret is shown once, by the connect that made it; a read never carries it.
    const { webhookSecret, ...shownOnce } = stored as typeof stored & { webhookSecret?: string }
    expect(typeof webhookSecret).toBe('string')
    expect(read).toEqual({ ...shownOnce, updatedAt: read!.updatedAt })
    expect(JSON.stringify(read)).not.toContain(webhookSecret!)
    expect(read).toMatchObject({ gitUrl: 'https://git.example/beta/shop.git', host: 'github', hostRepo: 'beta/shop', hasHostToken: true })
    expect(JSON.stringify(read)).not.toContain(token)
    expect(await connections.disconnect(b.orgId, b.appId)).toEqual({ appId: b.appId, disconnected: true })
    expect(await connections.get(b.orgId, b.appId)).toBeNull()
  })
})

describe('the CLI maps the codes to exit statuses', () => {
  let dataDir: string
  beforeAll(() => {
    ensureBinary()
    dataDir = tempDir('fixloop-admin-cli-')
  })
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

  test('a 4xx code exits 2 with the message on stderr and nothing on stdout', async () => {
    const org = await cliJson(dataDir, ['org', 'create', '--name', 'Exit Co'])
    const app = await cliJson(dataDir, ['app', 'create', '--org', org.id, '--name', 'Shop', '--slug', 'shop'])
    const cases: [string[], string][] = [
      [['app', 'rotate-secret', GHOST], `unknown app: ${GHOST}`],
      [['key', 'revoke', GHOST], `unknown key: ${GHOST}`],
      [['key', 'list', '--org', GHOST], `unknown org: ${GHOST}`],
      [['app', 'create', '--org', org.id, '--name', 'Shop'], 'slug "shop" is already used'],
      [['app', 'connect-repo', app.id, '--git-url', 'not a url'], '--git-url must be'],
    ]
    for (const [args, message] of cases) {
      const r = await runBinary([...args, '--data-dir', dataDir, '--json'])
      expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: '' })
      expect(r.stderr).toStartWith(`fixloop: ${message}`)
    }
  })
})

describe('admin email addresses', () => {
  test('case is folded, but never a character that lowercases into ASCII (the Kelvin sign is not a K)', async () => {
    const admins = createAdminsService(srv.ctx.store.admins, srv.ctx.box, srv.ctx.clock, passwordHasher(srv.ctx.config.passwordHashMib))
    const kate = await admins.create('Kate@Admins.example', null)
    expect(kate.email).toBe('kate@admins.example')
    expect((await admins.forVerifiedEmail('KATE@admins.EXAMPLE'))?.id).toBe(kate.id)
    // U+212A KELVIN SIGN lowercases to "k": an identity provider's verified "\u212Aate@…" is another mailbox.
    expect(await admins.forVerifiedEmail('\u212Aate@admins.example')).toBeUndefined()
    // The verified string as it is: with spaces around it, it is not the admin's address.
    for (const padded of [' kate@admins.example', 'kate@admins.example ', '\tkate@admins.example']) expect(await admins.forVerifiedEmail(padded)).toBeUndefined()
  })
})
