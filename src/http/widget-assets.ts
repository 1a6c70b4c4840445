/**
 * GET /widget.js and GET /widget/<ui-hash>.js: the browser widget, built by widget/build.ts and
 * embedded into the binary (imported as text, so `bun build --compile` carries it). The loader gets a
 * short cache (its name never changes); the UI file's name carries its content hash, so it is
 * immutable. Both are readable cross-origin (customer pages load them from another origin).
 */
import { Elysia } from 'elysia'
import loader from '../../widget/dist/widget.js' with { type: 'text' }
import ui from '../../widget/dist/ui.js' with { type: 'text' }
import manifest from '../../widget/dist/manifest.json'
import { ApiError } from '../core/errors'

export const WIDGET_PATH = '/widget.js'
export const WIDGET_UI_PATH = `/widget/${manifest.uiFile}`

const shared = {
  'content-type': 'text/javascript; charset=utf-8',
  'x-content-type-options': 'nosniff',
  'cross-origin-resource-policy': 'cross-origin',
  'access-control-allow-origin': '*',
}
const loaderEtag = `"${new Bun.CryptoHasher('sha256').update(loader).digest('hex').slice(0, 20)}"`

/** Serves the widget's two scripts (HEAD too); any other /widget/ name is 404 not_found. */
export function widgetAssets() {
  return new Elysia({ name: 'widget-assets' })
    .get(
      WIDGET_PATH,
      ({ request }) =>
        request.headers.get('if-none-match') === loaderEtag
          ? new Response(null, { status: 304, headers: { etag: loaderEtag, ...shared } })
          : new Response(loader, { headers: { ...shared, etag: loaderEtag, 'cache-control': 'public, max-age=300, stale-while-revalidate=86400' } }),
      { detail: { summary: 'The browser widget loader', description: 'An ES2019 script; `<script src="/widget.js" data-public-key="pub_..." async>` mounts the widget. Cached 5 minutes.', tags: ['Widget'], responses: { 200: { description: 'JavaScript' }, 304: { description: 'Not modified' } } } },
    )
    .get(
      '/widget/:file',
      ({ params }) => {
        if (`/widget/${params.file}` !== WIDGET_UI_PATH) throw new ApiError('not_found', undefined, 'No such widget file')
        return new Response(ui, { headers: { ...shared, 'cache-control': 'public, max-age=31536000, immutable' } })
      },
      { detail: { summary: 'The widget UI (lazy-loaded)', description: 'Loaded by widget.js on first open; the name carries a content hash, so it is cached for a year.', tags: ['Widget'], responses: { 200: { description: 'JavaScript' }, 404: { description: 'not_found (envelope)' } } } },
    )
}
