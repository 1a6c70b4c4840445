/**
 * The SSRF guard of App SMTP servers: the webhook guard's address rule (src/core/address-guard.ts)
 * applied to an SMTP host. An Org owner or an sk_ key chooses the host, and the test mail answers with
 * the server's short error, so without it a shared instance would let a tenant probe internal hosts and
 * ports. Checked when the settings are saved and again before every connection (test mail and reporter
 * mails: DNS may change between them); the connection then goes to the address checked here.
 * FIXLOOP_SMTP_ALLOW_PRIVATE=1 lifts the rule (a local relay, an internal mail server).
 */
import { refusedAddress, resolveHost, type CheckedAddress } from '../../core/address-guard'
import { allowPrivateHint } from '../../core/process-role'

/**
 * The one answer a refusal gets, wherever it is shown (test mail, outbox row, dashboard): no address, no
 * port, no DNS answer; the hint names the process that refused (the server, or this CLI command).
 */
export const smtpGuardRefusal = (): string =>
  `refused by the SMTP address guard: the host is, or resolves to, a private, loopback, link-local or reserved address (${allowPrivateHint('FIXLOOP_SMTP_ALLOW_PRIVATE')})`

export const SMTP_HOST_UNRESOLVED = 'the SMTP host does not resolve'

export type SmtpHostCheck = { ok: true; addresses: CheckedAddress[] } | { ok: false; why: 'refused' | 'unresolved' }

/** Connection attempts per message at most, one per checked address in resolver order (two 30 s setups stay inside the mailer's 2-minute lease). */
export const MAX_ADDRESSES_TRIED = 2

/** Resolves the host once and judges every address; the checked ones (resolver order, at most MAX_ADDRESSES_TRIED) are what to connect to. */
export async function checkSmtpHost(host: string, allowPrivate: boolean): Promise<SmtpHostCheck> {
  const addresses = await resolveHost(host)
  if (addresses.length === 0) return { ok: false, why: 'unresolved' }
  if (refusedAddress(addresses, allowPrivate)) return { ok: false, why: 'refused' }
  return { ok: true, addresses: addresses.slice(0, MAX_ADDRESSES_TRIED) }
}
