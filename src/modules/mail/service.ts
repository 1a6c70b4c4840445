/**
 * Mail rules callable from the routes and the CLI: an App's SMTP settings (the password sealed, never
 * returned), a test mail, unsubscribes, a report's mail for the dashboard, and a signed-in reporter's
 * own reports (GET /v1/me/feedback).
 */
import { ApiError } from '../../core/errors'
import type { Store } from '../../db/store'
import type { SecretBox } from '../../core/crypto'
import type { Clock } from '../../core/clock'
import type { Config } from '../../config'
import { changedDestination, secretRequiredAgain } from '../../core/kept-secret'
import { isoUtc } from '../../core/clock'
import { LIMITS } from '../../core/limits'
import { allowPrivateHint } from '../../core/process-role'
import type { ActedBy, AuditEntry } from '../audit/entry'
import { previewBudget, toListItem } from '../feedback/present'
import { fromMailbox, isMailAddress, maskAddress } from './address'
import { TLS_MODES, type SmtpRow, type TlsMode } from './repo'
import { checkSmtpHost } from './smtp-guard'
import { MailError, sendMail } from './transport'
import { CONFIRM_TTL_MS } from './confirm-policy'
import { mailKeys, verifyConfirmToken, verifyUnsubscribeToken } from './unsubscribe-token'

export interface SmtpInput {
  host: string
  port: number
  tls: TlsMode
  user?: string | null
  /** Omitted: keep the stored password (if any); null: remove it. */
  password?: string | null
  from: string
}

export type SmtpView = {
  appId: string
  host: string
  port: number
  tls: TlsMode
  user: string | null
  passwordSet: boolean
  from: string
  updatedAt: string
}

const HOST_RE = /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$|^\[[0-9A-Fa-f:.]{2,45}\]$/

/** The save-time refusal; the hint names the process that refused (the server, or this CLI command). */
const privateHost = (): string =>
  `refused by the SMTP address guard: the host is, or resolves to, a private, loopback, link-local or reserved address; for a local relay or an internal mail server, ${allowPrivateHint('FIXLOOP_SMTP_ALLOW_PRIVATE')}`

const bad = (path: string, message: string) => new ApiError('invalid_body', { issues: [{ path, message }] })

/** What this service is given: the repositories and values it uses (a Context has them all). */
export interface MailServiceDeps {
  store: Pick<Store, 'mail' | 'apps'>
  box: SecretBox
  clock: Clock
  urlSigningKey: Uint8Array
  config: Pick<Config, 'smtpAllowPrivate'>
}

/** `Name <a@b.c>` or `a@b.c`; the name without quotes, angle brackets or line breaks. */
export function isFromAddress(from: string): boolean {
  return fromMailbox(from) !== null
}

export function viewOf(r: SmtpRow): SmtpView {
  return { appId: r.app_id, host: r.host, port: r.port, tls: r.tls_mode, user: r.username, passwordSet: r.password_sealed !== null, from: r.from_address, updatedAt: isoUtc(r.updated_at) }
}

export function createMailService(ctx: MailServiceDeps) {
  const repo = ctx.store.mail
  const apps = ctx.store.apps
  const keys = mailKeys(ctx.urlSigningKey)
  const entry = (by: ActedBy, orgId: string, action: string, targetId: string, data: Record<string, unknown> = {}): AuditEntry => ({ orgId, actor: by.actor, ip: by.ip, action, targetId, data })

  async function liveApp(orgId: string, appId: string) {
    const app = await apps.getForOrg(orgId, appId)
    if (!app) throw new ApiError('app_not_found')
    return app
  }

  return {
    repo,

    async getSmtp(orgId: string, appId: string): Promise<SmtpView> {
      await liveApp(orgId, appId)
      const row = await repo.smtp(appId)
      if (!row) throw new ApiError('not_found')
      return viewOf(row)
    },

    /**
     * `confirmRetarget`: called, after the settings are checked and before they are stored, when they
     * are new or send reporters' mail to another server or account (host, port, TLS mode, user or
     * password); the route asks a dashboard session there for a fresh re-authentication. A change of the
     * From address alone is not asked about: the mail still goes where it went.
     */
    async putSmtp(orgId: string, appId: string, input: SmtpInput, by: ActedBy, confirmRetarget?: () => Promise<void>): Promise<SmtpView> {
      await liveApp(orgId, appId)
      const host = input.host.trim()
      if (!HOST_RE.test(host)) throw bad('/host', 'a host name or [IP address]')
      if (!Number.isInteger(input.port) || input.port < 1 || input.port > 65535) throw bad('/port', 'a port 1-65535')
      if (!(TLS_MODES as readonly string[]).includes(input.tls)) throw bad('/tls', `one of ${TLS_MODES.join(', ')}`)
      if (!isFromAddress(input.from.trim())) throw bad('/from', 'an address (noreply@example.com) or "Name <noreply@example.com>"')
      const user = input.user?.trim() || null
      if (user !== null && /[\r\n]/.test(user)) throw bad('/user', 'one line')
      // The address rule, last (it may ask DNS). A name that does not resolve (yet, or from here) is kept:
      // every connection checks again before it is made.
      const guard = await checkSmtpHost(host, ctx.config.smtpAllowPrivate)
      if (!guard.ok && guard.why === 'refused') throw bad('/host', privateHost())
      const before = await repo.smtp(appId)
      // The stored password is kept only while it would go where it was given for (core/kept-secret.ts):
      // pointed at another server, or sent without TLS, it would give itself to whoever made the change.
      if (input.password === undefined && before?.password_sealed) {
        const moved = changedDestination({ host: before.host.toLowerCase(), port: before.port, tls: before.tls_mode }, { host: host.toLowerCase(), port: input.port, tls: input.tls })
        if (moved.length > 0) throw bad('/password', secretRequiredAgain('password', moved))
      }
      const retargets =
        !before ||
        changedDestination({ host: before.host.toLowerCase(), port: before.port, tls: before.tls_mode, user: before.username }, { host: host.toLowerCase(), port: input.port, tls: input.tls, user }).length > 0 ||
        input.password !== undefined
      if (retargets) await confirmRetarget?.()
      const passwordSealed =
        input.password === undefined ? (before?.password_sealed ?? null) : input.password === null || input.password === '' ? null : ctx.box.seal(Buffer.from(input.password))
      const row: SmtpRow = {
        app_id: appId,
        org_id: orgId,
        host,
        port: input.port,
        tls_mode: input.tls,
        username: user,
        password_sealed: passwordSealed,
        from_address: input.from.trim(),
        updated_at: ctx.clock.now(),
      }
      // The audit row names what changed, never the password.
      await repo.putSmtp(row, [entry(by, orgId, 'app.smtp_set', appId, { host, port: input.port, tls: input.tls, user, passwordSet: passwordSealed !== null })])
      return viewOf(row)
    },

    async deleteSmtp(orgId: string, appId: string, by: ActedBy) {
      await liveApp(orgId, appId)
      if (!(await repo.deleteSmtp(appId, [entry(by, orgId, 'app.smtp_cleared', appId)]))) throw new ApiError('not_found')
      return { appId, deleted: true as const }
    },

    /**
     * Sends a test mail to `to` through the App's settings; the SMTP server's answer comes back, never the
     * password. A host the address guard refuses gets only smtpGuardRefusal(): nothing was connected to.
     */
    async testSmtp(orgId: string, appId: string, to: string) {
      const app = await liveApp(orgId, appId)
      if (!isMailAddress(to)) throw bad('/to', 'one email address')
      const row = await repo.smtp(appId)
      if (!row) throw new ApiError('not_found')
      try {
        await sendMail(
          ctx.box,
          row,
          {
            to,
            subject: `fixloop test mail for ${app.name.replace(/[\r\n]+/g, ' ').slice(0, 120)}`,
            text: 'This is a test mail from fixloop: the SMTP settings of this App work.\nReporters who ask to be told get their "fixed" mail this way.',
            headers: { 'Auto-Submitted': 'auto-generated' },
          },
          { allowPrivate: ctx.config.smtpAllowPrivate },
        )
        return { sent: true as const, to: maskAddress(to) }
      } catch (e) {
        return { sent: false as const, to: maskAddress(to), error: e instanceof MailError ? e.message : 'mail failed' }
      }
    },

    /** The token's App (its name for the page) and address hash, or null for a token that is not genuine. */
    async checkUnsubscribe(token: string): Promise<{ appId: string; emailHash: string; appName: string } | null> {
      const t = verifyUnsubscribeToken(keys.unsubscribeKey, token)
      return t ? { ...t, appName: (await repo.appName(t.appId)) ?? 'this service' } : null
    },

    /**
     * A confirmation link (double opt-in) that is genuine (its MAC): the App's name for the page; null
     * otherwise. Whether it is still unused and unexpired is known only when it is used (POST).
     */
    async checkConfirm(token: string): Promise<{ appName: string } | null> {
      const t = verifyConfirmToken(keys.confirmKey, token)
      return t ? { appName: (await repo.appName(t.appId)) ?? 'this service' } : null
    },

    /**
     * Uses a confirmation link: 'confirmed' (the address now gets the mails it asked for; the link is used
     * up), 'used' (used already, expired, or replaced by a newer one), or null for a link that is not genuine.
     */
    async confirm(token: string): Promise<{ result: 'confirmed' | 'used'; appName: string } | null> {
      const t = verifyConfirmToken(keys.confirmKey, token)
      if (!t) return null
      const now = ctx.clock.now()
      const ok = await repo.confirm(t.appId, t.emailHash, t.nonce, now, now - CONFIRM_TTL_MS)
      return { result: ok ? 'confirmed' : 'used', appName: (await repo.appName(t.appId)) ?? 'this service' }
    },

    async unsubscribe(token: string): Promise<boolean> {
      const t = verifyUnsubscribeToken(keys.unsubscribeKey, token)
      if (!t) return false
      await repo.unsubscribe(t.appId, t.emailHash, ctx.clock.now())
      return true
    },

    /**
     * The warning `fixloop serve` logs once at start when FIXLOOP_PUBLIC_URL is unset and Apps can mail:
     * the links in their mails (confirm, unsubscribe) then point at the listening address, which a reporter
     * cannot reach behind a proxy. Null when there is nothing to warn about.
     */
    async publicUrlWarning(publicUrl: string | undefined, listeningAt: string): Promise<{ message: string; apps: string[] } | null> {
      if (publicUrl) return null
      const apps = await repo.appsWithSmtp(21)
      if (apps.length === 0) return null
      const names = apps.slice(0, 20).map((a) => `"${a.name}" (${a.id})`)
      if (apps.length > 20) names.push('and more')
      return {
        message: `FIXLOOP_PUBLIC_URL is not set, but Apps mail their reporters (SMTP settings: ${names.join(', ')}): the confirm and unsubscribe links in those mails point at ${listeningAt}, which reporters cannot open unless that address is public; set FIXLOOP_PUBLIC_URL to the address people reach fixloop at`,
        apps: names,
      }
    },

    /** The report's mail for the dashboard: masked address, state and times; null when none was asked for. */
    async notification(orgId: string, feedbackId: string) {
      const row = await repo.outboxOf(orgId, feedbackId)
      if (!row) return null
      return {
        address: row.email_masked,
        state: row.state,
        attempts: row.attempts,
        lastError: row.last_error,
        queuedAt: isoUtc(row.created_at),
        settledAt: row.settled_at === null ? null : isoUtc(row.settled_at),
        nextAttemptAt: row.state === 'pending' ? isoUtc(row.next_attempt_at) : null,
      }
    },

    /** One signed-in user's reports of one App, newest first (text sanitized, as every read serves it). */
    async mine(appId: string, sub: string, q: { cursor?: string; limit: number }) {
      const rows = await repo.reportsOf(appId, sub, q.cursor, q.limit)
      const more = rows.length > q.limit
      const page = more ? rows.slice(0, q.limit) : rows
      const budget = previewBudget()
      const data = page.map((row) => {
        const item = toListItem(row, budget, null)
        return { id: item.id, status: item.status, createdAt: item.createdAt, text: item.text }
      })
      return { data, nextCursor: more ? page[page.length - 1].id : null }
    },
    limits: { min: LIMITS.listLimitMin, max: LIMITS.listLimitMax, def: LIMITS.listLimitDefault },
  }
}
export type MailService = ReturnType<typeof createMailService>
