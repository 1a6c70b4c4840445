/**
 * `fixloop serve --demo`: makes sure an Org "fixloop demo" with an App "Demo App" exists (created on
 * first use), prints the demo page URL and an sk_ key to read reports back, and hands the App's public
 * key to the /demo route.
 *
 * The key: only its hash is stored, so a key printed by an earlier start cannot be printed again. Each
 * start therefore mints a new demo key and revokes the ones earlier starts minted, in one transaction:
 * the demo Org never holds more than one live demo key, however often the server restarts. Everything
 * it creates or revokes is in the audit log (actor "system", via "serve --demo").
 */
import type { RunningServer } from '../server'
import { createTenantsService } from '../modules/tenants/service'
import { createAuditLog } from '../modules/audit/index'
import { createConsoleRepo } from '../modules/admin-api/console-repo'

export const DEMO_ORG = 'fixloop demo'
export const DEMO_APP = 'Demo App'
/** The name that marks a key as serve --demo's own (and so revoked by the next start). */
export const DEMO_KEY_NAME = 'demo (serve --demo)'

export interface DemoApp {
  publicKey: string
  appId: string
  orgId: string
  apiKey: string
  /** Prefixes of the demo keys of earlier starts, revoked by this one. */
  revokedPrefixes: string[]
}

export function ensureDemoApp(running: RunningServer): DemoApp {
  const { sqlite, clock } = running.ctx
  const tenants = createTenantsService(running.ctx)
  const audit = createAuditLog(sqlite, clock)
  const record = (orgId: string, action: string, targetId: string, data: Record<string, unknown> = {}) =>
    audit.record({ orgId, actor: 'system', action, targetId, data: { via: 'serve --demo', ...data } })

  return sqlite
    .transaction((): DemoApp => {
      let org = tenants.listOrgs().find((o) => o.name === DEMO_ORG)
      if (!org) {
        org = tenants.createOrg(DEMO_ORG)
        record(org.id, 'org.created', org.id, { name: DEMO_ORG })
      }
      let app = tenants.listApps(org.id).find((a) => a.name === DEMO_APP)
      if (!app) {
        app = tenants.createApp(org.id, { name: DEMO_APP })
        record(org.id, 'app.created', app.id, { settings: ['name'] })
      }
      const previous = tenants.listKeys(org.id).filter((k) => k.name === DEMO_KEY_NAME && k.revokedAt === null)
      const key = tenants.createKey(org.id, DEMO_KEY_NAME)
      // The dashboard's key list shows this as the creator.
      createConsoleRepo(sqlite).recordKeyCreator(key.id, 'serve --demo')
      record(org.id, 'key.created', key.id, { name: DEMO_KEY_NAME })
      for (const old of previous) {
        tenants.revokeKey(org.id, old.id)
        record(org.id, 'key.revoked', old.id, { replacedBy: key.id })
      }
      return { publicKey: app.publicKey, appId: app.id, orgId: org.id, apiKey: key.key, revokedPrefixes: previous.map((k) => k.prefix) }
    })
    .immediate()
}
