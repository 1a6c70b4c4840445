/**
 * The services every entry point builds the same way over the runtime's store: the server
 * (services.ts) and each CLI command. Built on first use, once per runtime, so a command that lists
 * Apps builds the tenants service and nothing else, and the two entry points cannot wire one service
 * two ways.
 */
import { withLazyMembers } from '../db/store'
import { createAdminsService } from '../modules/admins/service'
import { passwordHasher } from '../modules/admins/password-hash'
import { createAuditLog } from '../modules/audit/index'
import { createChatopsService } from '../modules/chatops/service'
import { createConnectionsService } from '../modules/connections/service'
import { createMailService } from '../modules/mail/service'
import { createTenantsService } from '../modules/tenants/service'
import { createTrackersService } from '../modules/trackers/service'
import { createWebhooksService, type WebhooksServiceOptions } from '../modules/webhooks/service'
import type { Runtime } from './runtime'

export function domainServices(rt: Runtime) {
  const { store, box, clock } = rt
  return withLazyMembers(
    {
      /** The webhook service; `options` for the CLI's hint about the server's private-address rule. */
      webhooks: (options?: WebhooksServiceOptions) => createWebhooksService(rt, options),
    },
    {
      tenants: () => createTenantsService(rt),
      connections: () => createConnectionsService(rt, store.lifecycle),
      admins: () => createAdminsService(store.admins, box, clock, passwordHasher(rt.config.passwordHashMib)),
      audit: () => createAuditLog(store.audit, clock),
      trackers: () => createTrackersService(rt, store.lifecycle),
      mail: () => createMailService(rt),
      chatops: () => createChatopsService(rt),
    },
  )
}
export type DomainServices = ReturnType<typeof domainServices>
