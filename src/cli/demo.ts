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
import type { RunningServer } from '../runtime/server'

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

/**
 * Not one transaction: the steps span several repositories, and each is idempotent (found by name, or
 * made), so a start interrupted half-way is completed by the next one.
 */
export async function ensureDemoApp(running: RunningServer): Promise<DemoApp> {
  const tenants = running.services.tenants
  const by = { actor: 'system', note: { via: 'serve --demo' } }
  const org = (await tenants.listOrgs()).find((o) => o.name === DEMO_ORG) ?? (await tenants.createOrg(DEMO_ORG, by))
  const app = (await tenants.listApps(org.id)).find((a) => a.name === DEMO_APP) ?? (await tenants.createApp(org.id, { name: DEMO_APP }, by))
  const previous = (await tenants.listKeys(org.id)).filter((k) => k.name === DEMO_KEY_NAME && k.revokedAt === null)
  // The dashboard's key list shows "serve --demo" as the creator.
  const key = await tenants.createKey(org.id, DEMO_KEY_NAME, { ...by, label: 'serve --demo' })
  for (const old of previous) await tenants.revokeKey(org.id, old.id, { ...by, note: { ...by.note, replacedBy: key.id } })
  return { publicKey: app.publicKey, appId: app.id, orgId: org.id, apiKey: key.key, revokedPrefixes: previous.map((k) => k.prefix) }
}
