/**
 * The /docs explorer's script and stylesheet, embedded into the binary so the explorer works on a
 * machine with no internet access (the plugin's default loads them from a public CDN).
 */
import { Elysia } from 'elysia'
import bundle from '../../node_modules/swagger-ui-dist/swagger-ui-bundle.js' with { type: 'text' }
import css from '../../node_modules/swagger-ui-dist/swagger-ui.css' with { type: 'text' }

export const DOCS_SCRIPT_PATH = '/docs/assets/swagger-ui-bundle.js'
export const DOCS_STYLE_PATH = '/docs/assets/swagger-ui.css'

const cached = { 'cache-control': 'public, max-age=86400', 'x-content-type-options': 'nosniff' }

export function docsAssets() {
  return new Elysia({ name: 'docs-assets' })
    .get(DOCS_SCRIPT_PATH, () => new Response(bundle, { headers: { 'content-type': 'text/javascript; charset=utf-8', ...cached } }), { detail: { hide: true } })
    .get(DOCS_STYLE_PATH, () => new Response(css, { headers: { 'content-type': 'text/css; charset=utf-8', ...cached } }), { detail: { hide: true } })
}
