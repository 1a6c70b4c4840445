/**
 * Serves the dashboard: one HTML shell for every /admin page (the client routes), and the hashed assets.
 * The page's Content-Security-Policy allows only this server's own scripts and the import map (by hash),
 * so an injected script cannot run even if a report's text slipped past escaping.
 */
import { Elysia } from 'elysia'
import { createHash } from 'node:crypto'
import { gzipSync } from 'node:zlib'
import { ASSETS, REPLAY_FRAME_ASSETS, REPLAY_FRAME_CSS, type Asset } from './assets'
import { ApiError } from '../core/errors'
import { resolveSession, type AdminAuthDeps } from '../http/admin-auth'
import { canSee } from '../modules/admins/service'
import { favicon as faviconIcon } from './favicon'
import { noneMatch } from '../http/etag'

const byUrl = new Map([...ASSETS, ...Object.values(REPLAY_FRAME_ASSETS)].map((a) => [a.url, a]))
const importMap = JSON.stringify({ imports: Object.fromEntries(ASSETS.filter((a) => a.specifier).map((a) => [a.specifier, a.url])) })
const importMapHash = createHash('sha256').update(importMap).digest('base64')
const styleUrl = ASSETS.find((a) => a.specifier === null)!.url
const mainUrl = ASSETS.find((a) => a.specifier === '@fixloop/main')!.url

const SHELL = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>fixloop admin</title>
<link rel="icon" href="/favicon.ico" sizes="16x16 32x32">
<link rel="stylesheet" href="${styleUrl}">
<script type="importmap">${importMap}</script>
<script type="module" src="${mainUrl}"></script>
</head>
<body>
<div id="root"><noscript>The fixloop dashboard needs JavaScript. Everything it does is also in the API: see /docs.</noscript></div>
</body>
</html>
`

/**
 * The dashboard's policy. `blobOrigin`: where attachment URLs point when blobs live in S3/MinIO (they are
 * presigned against FIXLOOP_S3_ENDPOINT, path-style): screenshots are <img> there and the replay is fetched
 * from there, so that origin (and only it) joins img-src and connect-src. The embedded store serves them
 * from this server ('self').
 */
export function dashboardCsp(blobOrigin?: string): string {
  const blobs = blobOrigin ? ` ${blobOrigin}` : ''
  return [
    "default-src 'none'",
    `script-src 'self' 'sha256-${importMapHash}'`,
    "style-src 'self'",
    `img-src 'self'${blobs} data: blob:`,
    `connect-src 'self'${blobs}`,
    // The report page's session replay frame (/admin/replay-frame) and nothing else: every other page of
    // this origin refuses to be framed (frame-ancestors 'none').
    "frame-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ')
}

const pageHeaders = (csp: string) => ({
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': csp,
  // frame-ancestors says it to every current browser; this says it to older ones and to scanners.
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
})

/**
 * The session replay frame: rrweb's replayer runs here, in a document of its own, so the looser style
 * rules a recorded page needs (its own <style> elements and style attributes: 'unsafe-inline') apply to
 * this frame only, never to the dashboard. rrweb rebuilds the recording into an about:blank iframe
 * inside it, sandboxed with exactly "allow-same-origin" (no allow-scripts): nothing recorded runs, and
 * that iframe inherits this policy too (no inline script, no javascript: URL, no stylesheet, font or
 * image from anywhere, this server included; images only from the recording's data: and blob: URLs, so
 * a recorded <img src> cannot call out). Framed only by the dashboard itself.
 */
const FRAME = REPLAY_FRAME_ASSETS
const REPLAY_FRAME = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Session replay</title>
<style>${REPLAY_FRAME_CSS}</style>
<script src="${FRAME.rrweb.url}" defer></script>
<script src="${FRAME.script.url}" defer></script>
</head>
<body>
<div id="player"></div>
</body>
</html>
`

/** The replay frame's policy: see REPLAY_FRAME. */
export const REPLAY_FRAME_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  // Inline styles only (the frame's own are in its page): 'self' here let the recording, which inherits
  // this policy, load any URL of this server as a stylesheet (<link rel=stylesheet>, @import), a GET with
  // the operator's cookies (e.g. /admin/oidc/start, which replaces a sign-in or confirmation under way).
  "style-src 'unsafe-inline'",
  'img-src data: blob:',
  'font-src data:',
  'media-src data: blob:',
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'self'",
].join('; ')

const REPLAY_FRAME_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': REPLAY_FRAME_CSP,
  'x-frame-options': 'SAMEORIGIN',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
}

const ORG_PAGE_RE = /^\/admin\/o\/([^/]+)(?:\/(apps|r)\/([^/]+))?/

/**
 * The page is the same shell everywhere, but its HTTP status tells the truth: a page of an Org the
 * signed-in admin does not belong to (or an App or report outside it) is 404, as the API would say.
 */
/** The Org-scoped existence checks a page status needs (the console service has them). */
export interface PageLookups {
  orgExists(orgId: string): Promise<boolean>
  appInOrg(orgId: string, appId: string): Promise<boolean>
  feedbackInOrg(orgId: string, id: string): Promise<boolean>
}

async function pageStatus(deps: AdminAuthDeps, lookups: PageLookups, request: Request): Promise<number> {
  const m = ORG_PAGE_RE.exec(new URL(request.url).pathname)
  if (!m) return 200
  let session
  try {
    session = await resolveSession(deps, request)
  } catch {
    return 200 // two session cookies: the page says so (GET /admin/api/session explains)
  }
  const admin = session && (await deps.admins.identity(session.adminId))
  if (!admin) return 200 // the sign-in form
  const [, orgId, kind, id] = m
  if (!canSee(admin, orgId) || !(await lookups.orgExists(orgId))) return 404
  if (kind === 'apps' && !(await lookups.appInOrg(orgId, id))) return 404
  if (kind === 'r' && !(await lookups.feedbackInOrg(orgId, id))) return 404
  return 200
}

/** Each asset's gzip, made on its first request (rrweb's replayer: 280 KB, about 85 KB gzipped). */
const gzipped = new Map<string, Uint8Array>()
const GZIP_FROM_BYTES = 1024

/** An asset, gzipped when the browser accepts it (every browser does); immutable under its hashed name. */
function assetResponse(a: Asset, request: Request): Response {
  const headers: Record<string, string> = { 'content-type': a.contentType, 'cache-control': 'public, max-age=31536000, immutable', 'x-content-type-options': 'nosniff', vary: 'accept-encoding' }
  if (a.body.length < GZIP_FROM_BYTES || !/\bgzip\b/i.test(request.headers.get('accept-encoding') ?? '')) return new Response(a.body, { headers })
  let body = gzipped.get(a.url)
  if (!body) gzipped.set(a.url, (body = gzipSync(a.body)))
  return new Response(body, { headers: { ...headers, 'content-encoding': 'gzip' } })
}

/** A day in caches, then a cheap revalidation (the icon's URL is fixed, so it cannot be immutable). */
const faviconHeaders = (etag: string) => ({
  'content-type': 'image/x-icon',
  'cache-control': 'public, max-age=86400',
  etag,
  'x-content-type-options': 'nosniff',
})

/** GET /favicon.ico for every page the server has (browsers ask for it whether a page links it or not). */
function favicon(request: Request): Response {
  const { ico, etag } = faviconIcon()
  if (noneMatch(request.headers.get('if-none-match'), etag)) return new Response(null, { status: 304, headers: faviconHeaders(etag) })
  return new Response(ico, { headers: faviconHeaders(etag) })
}

/** The /admin pages, /admin/assets/* and /favicon.ico; `blobOrigin` as `dashboardCsp` takes it. */
export function dashboardPages(deps: AdminAuthDeps, lookups: PageLookups, blobOrigin?: string) {
  const headers = pageHeaders(dashboardCsp(blobOrigin))
  const page = async (request?: Request) => new Response(SHELL, { status: request ? await pageStatus(deps, lookups, request) : 200, headers })
  return new Elysia({ name: 'dashboard-pages' })
    .get('/favicon.ico', ({ request }) => favicon(request), { detail: { hide: true } })
    .get('/admin', () => page(), { detail: { summary: 'The admin dashboard (HTML)', description: 'Sign in with an admin created by `fixloop admin create` or the first-run setup link.', tags: ['admin'] } })
    .get('/admin/', () => page(), { detail: { hide: true } })
    // No data in it (the dashboard posts the recording's events): the same static page for everyone.
    .get('/admin/replay-frame', () => new Response(REPLAY_FRAME, { headers: REPLAY_FRAME_HEADERS }), { detail: { hide: true } })
    .get('/admin/assets/:file', ({ params, request }) => {
      const a = byUrl.get(`/admin/assets/${params.file}`)
      if (!a) return new Response('not found', { status: 404, headers: { 'content-type': 'text/plain' } })
      return assetResponse(a, request)
    }, { detail: { hide: true } })
    .get(
      '/admin/*',
      ({ request }) => {
        // An unknown API path is the API's 404, not the HTML shell.
        if (new URL(request.url).pathname.startsWith('/admin/api/')) throw new ApiError('route_not_found')
        return page(request)
      },
      { detail: { hide: true } },
    )
}
