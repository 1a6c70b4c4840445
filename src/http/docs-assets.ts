/**
 * The /docs explorer: its page, script and stylesheet, embedded into the binary so the explorer works on
 * a machine with no internet access (the OpenAPI plugin's page loads them from a public CDN).
 *
 * The page is ours rather than the plugin's so that it carries no inline script: its Content-Security-
 * Policy allows this origin's scripts only and no framing, like every other page here. /docs shares its
 * origin with /admin, where a script could read a session's CSRF token, so a DOM XSS in the explorer
 * must find no script to run and no frame to run in.
 */
import { Elysia } from 'elysia'
import { escapeHtml } from '../core/escape-html'
import bundle from '../../node_modules/swagger-ui-dist/swagger-ui-bundle.js' with { type: 'text' }
import css from '../../node_modules/swagger-ui-dist/swagger-ui.css' with { type: 'text' }

export const DOCS_PATH = '/docs'
export const DOCS_SCRIPT_PATH = '/docs/assets/swagger-ui-bundle.js'
export const DOCS_STYLE_PATH = '/docs/assets/swagger-ui.css'
export const DOCS_INIT_PATH = '/docs/assets/init.js'
export const DOCS_THEME_PATH = '/docs/assets/theme.css'

const cached = { 'cache-control': 'public, max-age=86400', 'x-content-type-options': 'nosniff' }

/** Starts the explorer on the API's document (the plugin's page did this in an inline script). */
const INIT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui' })
})
`

/** Dark mode, as the plugin's page had it. */
const THEME = `@media (prefers-color-scheme: dark) {
  body { background-color: #222; color: #faf9fa; }
  .swagger-ui { filter: invert(92%) hue-rotate(180deg); }
  .swagger-ui .microlight { filter: invert(100%) hue-rotate(180deg); }
}
`

function page(title: string, description: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <meta name="viewport" content="width=device-width, initial-scale=1" />
  <title>${escapeHtml(title)}</title>
  <meta name="description" content="${escapeHtml(description)}" />
  <link rel="stylesheet" href="${DOCS_STYLE_PATH}" />
  <link rel="stylesheet" href="${DOCS_THEME_PATH}" />
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="${DOCS_SCRIPT_PATH}"></script>
  <script src="${DOCS_INIT_PATH}"></script>
</body>
</html>
`
}

/**
 * This origin's scripts, styles and API only. Swagger UI sets element styles as it renders ('unsafe-inline'
 * for styles, never for scripts) and shows data: images (its icons).
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ')

export function docsAssets(title: string, description: string) {
  const html = page(title, description)
  const pageHeaders = {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': DOCS_CSP,
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-cache',
  }
  return new Elysia({ name: 'docs-assets' })
    .get(DOCS_PATH, () => new Response(html, { headers: pageHeaders }), { detail: { hide: true } })
    .get(DOCS_SCRIPT_PATH, () => new Response(bundle, { headers: { 'content-type': 'text/javascript; charset=utf-8', ...cached } }), { detail: { hide: true } })
    .get(DOCS_INIT_PATH, () => new Response(INIT, { headers: { 'content-type': 'text/javascript; charset=utf-8', ...cached } }), { detail: { hide: true } })
    .get(DOCS_STYLE_PATH, () => new Response(css, { headers: { 'content-type': 'text/css; charset=utf-8', ...cached } }), { detail: { hide: true } })
    .get(DOCS_THEME_PATH, () => new Response(THEME, { headers: { 'content-type': 'text/css; charset=utf-8', ...cached } }), { detail: { hide: true } })
}
