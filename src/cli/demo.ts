/**
 * `fixloop serve --demo`: makes sure an Org "fixloop demo" with an App "Demo App" exists (created on
 * first use), prints the demo page URL and a fresh sk_ key to read reports back, and hands the App's
 * public key to the /demo route.
 */
import type { RunningServer } from '../server'
import { createTenantsService } from '../modules/tenants/service'

export const DEMO_ORG = 'fixloop demo'

export function ensureDemoApp(running: RunningServer): { publicKey: string; appId: string; orgId: string; apiKey: string } {
  const tenants = createTenantsService(running.ctx)
  const org = tenants.listOrgs().find((o: { name: string }) => o.name === DEMO_ORG) ?? tenants.createOrg(DEMO_ORG)
  const app = tenants.listApps(org.id).find((a) => a.name === 'Demo App') ?? tenants.createApp(org.id, { name: 'Demo App' })
  const key = tenants.createKey(org.id, 'demo (serve --demo)')
  return { publicKey: app.publicKey, appId: app.id, orgId: org.id, apiKey: key.key }
}
