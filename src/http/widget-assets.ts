/**
 * GET /widget.js, GET /widget/<ui-hash>.js, GET /widget/locale-<tag>-<hash>.json and
 * GET /widget/<replay-hash>.js (the session recorder, loaded only on Apps with replay on): the browser widget,
 * built by widget/build.ts and embedded into the binary (imported as text/JSON, so `bun build --compile`
 * carries it). The loader gets a short cache (its name never changes); the UI file's and the locale
 * tables' names carry their content hash, so they are immutable. All are readable cross-origin
 * (customer pages load them from another origin).
 */
import { Elysia } from 'elysia'
import loader from '../../widget/dist/widget.js' with { type: 'text' }
import ui from '../../widget/dist/ui.js' with { type: 'text' }
import replay from '../../widget/dist/replay.js' with { type: 'text' }
import manifest from '../../widget/dist/manifest.json'
import localeTables from '../../widget/dist/locales.json'
import { ApiError } from '../core/errors'
import { noneMatch } from './etag'

export const WIDGET_PATH = '/widget.js'
export const WIDGET_UI_PATH = `/widget/${manifest.uiFile}`
export const WIDGET_REPLAY_PATH = `/widget/${manifest.replayFile}`

const shared = {
  'content-type': 'text/javascript; charset=utf-8',
  'x-content-type-options': 'nosniff',
  'cross-origin-resource-policy': 'cross-origin',
  'access-control-allow-origin': '*',
}
/** File name -> JSON text of each locale's strings (a Map: a name like "__proto__" is just absent). */
const LOCALE_FILES = new Map<string, string>(Object.entries(localeTables as Record<string, string>))
const loaderEtag = `"${new Bun.CryptoHasher('sha256').update(loader).digest('hex').slice(0, 20)}"`
/** On the 304 too (RFC 9110 15.4.5): a cache renews the loader's freshness from the revalidation's answer. */
const loaderHeaders = { ...shared, etag: loaderEtag, 'cache-control': 'public, max-age=300, stale-while-revalidate=86400' }

/** Serves the widget's three scripts and its locale tables (HEAD too); any other /widget/ name is 404 not_found. */
export function widgetAssets() {
  return new Elysia({ name: 'widget-assets' })
    .get(
      WIDGET_PATH,
      ({ request }) =>
        noneMatch(request.headers.get('if-none-match'), loaderEtag)
          ? new Response(null, { status: 304, headers: loaderHeaders })
          : new Response(loader, { headers: loaderHeaders }),
      { detail: { summary: 'The browser widget loader', description: 'An ES2019 script; `<script src="/widget.js" data-public-key="pub_..." async>` mounts the widget. Cached 5 minutes.', tags: ['Widget'], responses: { 200: { description: 'JavaScript' }, 304: { description: 'Not modified' } } } },
    )
    .get(
      '/widget/:file',
      ({ params }) => {
        const immutable = 'public, max-age=31536000, immutable'
        if (`/widget/${params.file}` === WIDGET_UI_PATH) return new Response(ui, { headers: { ...shared, 'cache-control': immutable } })
        if (`/widget/${params.file}` === WIDGET_REPLAY_PATH) return new Response(replay, { headers: { ...shared, 'cache-control': immutable } })
        const table = LOCALE_FILES.get(params.file)
        if (table !== undefined) return new Response(table, { headers: { ...shared, 'content-type': 'application/json; charset=utf-8', 'cache-control': immutable } })
        throw new ApiError('not_found', undefined, 'No such widget file')
      },
      { detail: { summary: 'The widget UI, locale tables and session recorder (lazy-loaded)', description: 'Loaded by widget.js on first open: the UI script, and the chosen language\'s strings as locale-<tag>-<hash>.json; the session recorder only when the App has replay on; the names carry a content hash, so they are cached for a year.', tags: ['Widget'], responses: { 200: { description: 'JavaScript' }, 404: { description: 'not_found (envelope)' }, 413: { description: 'payload_too_large (envelope): a body over 8 MB is refused before any route (error-docs.ts errorSchemas)' } } } },
    )
}
