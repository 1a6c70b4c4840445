/**
 * Mail routes: an App's SMTP settings (sk_ key), a report's mail for the dashboard, the one-click
 * unsubscribe (the token is the credential) and a signed-in reporter's own reports (pub_ key + user token).
 */
import { Elysia, t } from 'elysia'
import { ApiError } from '../../core/errors'
import { escapeHtml } from '../../core/escape-html'
import { ID_PATTERN } from '../../core/ids'
import { FEEDBACK_STATUSES } from '../../core/fsm'
import { oneOf } from '../../core/schema'
import { actedBy, authenticateWidget, confirmSessionCaller, orgAuth, type AuthDeps } from '../../http/auth'
import { accessGuard } from '../../http/access-guard'
import { BEARER_PUB, BEARER_SK, errorSchemas, ORG_OWNER_ERRORS, ORG_AUTH_ERRORS, WIDGET_AUTH_ERRORS } from '../../http/error-docs'
import { readIntQuery } from '../../http/query'
import { LIMITS } from '../../core/limits'
import { TLS_MODES } from './repo'
import type { MailService } from './service'

const closed = { additionalProperties: false } as const
const Id = t.String({ pattern: ID_PATTERN })
const doc = (summary: string, description?: string) => ({ summary, description, tags: ['mail'], security: BEARER_SK })

const SmtpBody = t.Object(
  {
    host: t.String({ minLength: 1, maxLength: 255 }),
    port: t.Integer({ minimum: 1, maximum: 65535 }),
    tls: oneOf(TLS_MODES),
    user: t.Optional(t.Union([t.String({ maxLength: 255 }), t.Null()])),
    password: t.Optional(t.Union([t.String({ maxLength: 1024, description: 'Stored encrypted, never returned. Omit to keep the stored one (only while host, port and tls are unchanged: otherwise 400 invalid_body on /password); null to remove it.' }), t.Null()])),
    from: t.String({ minLength: 3, maxLength: 320, description: 'noreply@example.com or "Name <noreply@example.com>"' }),
  },
  closed,
)
const SmtpView = t.Object(
  {
    appId: Id,
    host: t.String(),
    port: t.Integer(),
    tls: oneOf(TLS_MODES),
    user: t.Union([t.String(), t.Null()]),
    passwordSet: t.Boolean(),
    from: t.String(),
    updatedAt: t.String({ format: 'date-time' }),
  },
  closed,
)
const AppParams = t.Object({ id: Id }, closed)
const Notification = t.Object(
  {
    address: t.String({ description: 'Masked: j***@example.com' }),
    state: oneOf(['pending', 'sent', 'failed', 'unsubscribed', 'no_smtp', 'same_address', 'unconfirmed']),
    attempts: t.Integer(),
    lastError: t.Union([t.String(), t.Null()]),
    queuedAt: t.String({ format: 'date-time' }),
    settledAt: t.Union([t.String({ format: 'date-time' }), t.Null()]),
    nextAttemptAt: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  },
  closed,
)

export function mailRoutes(auth: AuthDeps, mail: MailService) {
  return new Elysia({ name: 'mail' })
    .use(orgAuth(auth))
    .get('/v1/apps/:id/smtp', ({ org, params }) => mail.getSmtp(org.orgId, params.id), {
      access: 'mail.manage',
      params: AppParams,
      response: { 200: t.NoValidate(SmtpView), ...errorSchemas(...ORG_OWNER_ERRORS, 'invalid_id', 'app_not_found', 'not_found') },
      detail: doc("The App's SMTP settings", 'The password is never returned: `passwordSet` says whether one is stored. 404 not_found when none are set.'),
    })
    .put(
      '/v1/apps/:id/smtp',
      ({ org, params, body, request, server }) =>
        // Reporters' mail would go to that server long after the session: a session proves it is the admin.
        mail.putSmtp(org.orgId, params.id, body, actedBy(auth, org, request, server), () => confirmSessionCaller(auth, org, 'smtp_change', request, server, params.id)),
      {
        access: 'mail.manage',
        params: AppParams,
        body: SmtpBody,
        parse: 'json',
        response: { 200: t.NoValidate(SmtpView), ...errorSchemas(...ORG_OWNER_ERRORS, 'invalid_body', 'invalid_credentials', 'invalid_id', 'app_not_found', 'payload_too_large') },
        detail: doc(
          'Set the App\'s SMTP settings',
          'Used to email reporters who asked to be told when their report is resolved (docs/email.md). tls: none (plain), starttls (upgrade required), tls (implicit TLS, port 465). The host must resolve to public addresses unless the server runs with FIXLOOP_SMTP_ALLOW_PRIVATE=1 (400 invalid_body on /host otherwise); it is checked again before every connection. An `sk_` key is asked nothing more. A dashboard session that sets the first settings or changes host, port, tls, user or password (not `from` alone) must first confirm it is the admin: an unused confirmation for `smtp_change` at most 5 minutes old, by password (POST /admin/api/me/reauth/password) or at the identity provider (POST /admin/api/me/reauth), used up by this call; otherwise 401 invalid_credentials with `details.reauthRequired`.',
        ),
      },
    )
    .delete('/v1/apps/:id/smtp', ({ org, params, request, server }) => mail.deleteSmtp(org.orgId, params.id, actedBy(auth, org, request, server)), {
      access: 'mail.manage',
      params: AppParams,
      response: { 200: t.NoValidate(t.Object({ appId: Id, deleted: t.Literal(true) })), ...errorSchemas(...ORG_OWNER_ERRORS, 'invalid_body', 'invalid_id', 'app_not_found', 'not_found') },
      detail: doc("Remove the App's SMTP settings", 'Mails not yet sent are then settled as no_smtp.'),
    })
    .post('/v1/apps/:id/smtp/test', ({ org, params, body }) => mail.testSmtp(org.orgId, params.id, body.to), {
      access: 'mail.manage',
      params: AppParams,
      body: t.Object({ to: t.String({ minLength: 3, maxLength: 254 }) }, closed),
      parse: 'json',
      response: {
        200: t.NoValidate(t.Object({ sent: t.Boolean(), to: t.String(), error: t.Optional(t.String()) })),
        ...errorSchemas(...ORG_OWNER_ERRORS, 'invalid_body', 'invalid_id', 'app_not_found', 'not_found'),
      },
      detail: doc(
        'Send a test mail',
        '200 with sent: false and the SMTP server\'s answer when it refused or could not be reached; when the SMTP address guard refuses the host (private, loopback, link-local or reserved, FIXLOOP_SMTP_ALLOW_PRIVATE off), only "refused by the SMTP address guard: …" and nothing is connected to.',
      ),
    })
    .get(
      '/v1/feedback/:id/notification',
      async ({ org, params }) => {
        const n = await mail.notification(org.orgId, params.id)
        if (!n) throw new ApiError('not_found')
        return n
      },
      {
        access: 'org.read',
        params: AppParams,
        response: { 200: t.NoValidate(Notification), ...errorSchemas(...ORG_AUTH_ERRORS, 'invalid_id', 'not_found') },
        detail: { ...doc('Who was told the report is resolved', 'The reporter\'s "fixed" mail: masked address, state, attempts. 404 when the reporter did not opt in or the report is not resolved yet.'), tags: ['feedback'] },
      },
    )
}

const page = (title: string, body: string) =>
  new Response(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${title}</title>` +
      '<style>body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:2.5rem auto;padding:0 1rem;color:#1a1a1a}h1{font-size:1.6rem;line-height:1.25}button{font:inherit;padding:.5rem 1rem;border-radius:.375rem;border:1px solid #1a1a1a;background:#1a1a1a;color:#fff;cursor:pointer}button:focus-visible{outline:3px solid #2563eb;outline-offset:2px}</style>' +
      `</head><body><main><h1>${title}</h1>${body}</main></body></html>`,
    { headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', 'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'", 'x-frame-options': 'DENY', 'x-content-type-options': 'nosniff' } },
  )

const tokenOf = (request: Request) => {
  const all = new URL(request.url).searchParams.getAll('token')
  return all.length === 1 ? all[0] : ''
}

const notValid = (what: string) => {
  const r = page('Link not valid', `<p>This ${what} link is not valid. Copy the whole link from the mail.</p>`)
  return new Response(r.body, { status: 404, headers: r.headers })
}

/**
 * GET shows a page with one button (a link scanner that follows the link unsubscribes nobody); POST
 * unsubscribes: the page's button and RFC 8058 one-click clients (`List-Unsubscribe=One-Click`). The
 * pages name the product by the App's name, as the mail did (an end user knows no "App").
 */
export function unsubscribeRoutes(mail: MailService) {
  return new Elysia({ name: 'mail-unsubscribe' })
    .use(accessGuard())
    .get(
      '/v1/mail/unsubscribe',
      async ({ request }) => {
        const token = tokenOf(request)
        const t = await mail.checkUnsubscribe(token)
        if (!t) return notValid('unsubscribe')
        return page(
          'Unsubscribe',
          `<p>Stop all mails from ${escapeHtml(t.appName)} about the problems you reported?</p><form method="post" action="/v1/mail/unsubscribe?token=${encodeURIComponent(token)}"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Unsubscribe</button></form>`,
        )
      },
      { access: 'anyone', detail: { summary: 'Unsubscribe page (the link in a reporter mail)', tags: ['mail'] } },
    )
    .post(
      '/v1/mail/unsubscribe',
      async ({ request }) => {
        const token = tokenOf(request)
        const t = await mail.checkUnsubscribe(token)
        if (!t || !(await mail.unsubscribe(token))) return notValid('unsubscribe')
        return page('Unsubscribed', `<p>You will get no more mails from ${escapeHtml(t.appName)} about the problems you reported.</p>`)
      },
      { access: 'anyone', detail: { summary: 'One-click unsubscribe (RFC 8058)', tags: ['mail'] } },
    )
}

/**
 * The double opt-in's link (docs/email.md "Confirming a public-mode address"): GET shows a page with one
 * button (a mail scanner that fetches links confirms nothing), POST confirms. Single use; 7 days.
 */
export function confirmRoutes(mail: MailService) {
  return new Elysia({ name: 'mail-confirm' })
    .use(accessGuard())
    .get(
      '/v1/mail/confirm',
      async ({ request }) => {
        const token = tokenOf(request)
        const t = await mail.checkConfirm(token)
        if (!t) return notValid('confirmation')
        return page(
          'Confirm your address',
          `<p>Get one mail from ${escapeHtml(t.appName)} when the problem you reported is fixed?</p><form method="post" action="/v1/mail/confirm?token=${encodeURIComponent(token)}"><button type="submit">Yes, confirm my address</button></form><p>If you did not ask for this, close this page: nothing will be sent.</p>`,
        )
      },
      { access: 'anyone', detail: { summary: 'Confirmation page (the link in a confirmation mail)', tags: ['mail'] } },
    )
    .post(
      '/v1/mail/confirm',
      async ({ request }) => {
        const r = await mail.confirm(tokenOf(request))
        if (!r) return notValid('confirmation')
        if (r.result === 'used') {
          const p = page('Link already used', `<p>This link was used already or has expired. If you confirmed before, ${escapeHtml(r.appName)} will write to you when the problem is fixed.</p>`)
          return new Response(p.body, { status: 410, headers: p.headers })
        }
        return page('Address confirmed', `<p>Thank you. ${escapeHtml(r.appName)} will write to you when the problem you reported is fixed.</p>`)
      },
      { access: 'anyone', detail: { summary: 'Confirm an address (double opt-in)', tags: ['mail'] } },
    )
}

const MeQuery = t.Object(
  {
    cursor: t.Optional(t.String({ pattern: ID_PATTERN, description: 'The id of the last item of the previous page' })),
    limit: t.Optional(t.Numeric({ minimum: LIMITS.listLimitMin, maximum: LIMITS.listLimitMax, multipleOf: 1 })),
  },
  closed,
)
const MeItem = t.Object({ id: Id, status: oneOf(FEEDBACK_STATUSES), createdAt: t.String({ format: 'date-time' }), text: t.String({ description: 'The sanitized text' }) }, closed)

/** GET /v1/me/feedback: the user token's `sub`'s own reports of the public key's App. */
export function meRoutes(auth: AuthDeps, mail: MailService) {
  return new Elysia({ name: 'me-feedback' })
    .use(accessGuard())
    .get(
      '/v1/me/feedback',
      async ({ request, server }) => {
        const caller = await authenticateWidget(auth, request, server, 'mine')
        const user = caller.user
        if (!user) throw new ApiError('invalid_user_token') // never: a `mine` caller without a token is refused above
        const cursor = new URL(request.url).searchParams.get('cursor') ?? undefined
        const limit = readIntQuery(request, 'limit', { min: LIMITS.listLimitMin, max: LIMITS.listLimitMax }, LIMITS.listLimitDefault)
        return mail.mine(caller.app.row.id, user.sub, { cursor, limit })
      },
      {
        access: 'widget',
        query: MeQuery,
        response: { 200: t.NoValidate(t.Object({ data: t.Array(MeItem), nextCursor: t.Union([Id, t.Null()]) })), ...errorSchemas(...WIDGET_AUTH_ERRORS, 'invalid_body') },
        detail: {
          summary: "The signed-in user's own reports",
          description:
            "Private mode: Authorization: Bearer pub_… and X-Service-User-Token (required; 401 invalid_user_token without it). Lists only reports submitted with a user token of the same `sub` to this App, newest first (public-mode reports are never listed: their identity is self-declared). Works for any App whose user tokens verify, public submission on or off. Shares the upload-URL rate limit of that user. Paged like GET /v1/feedback.",
          tags: ['widget'],
          security: BEARER_PUB,
          parameters: [{ name: 'x-service-user-token', in: 'header' as const, required: true, schema: { type: 'string' as const } }],
        },
      },
    )
}
