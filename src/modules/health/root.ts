/**
 * GET /: where to go from the server's root. Browsers (Accept: text/html) get a small styled page with
 * links (the demo page too under `serve --demo`); everything else gets JSON with the same links.
 */
import { Elysia, t } from 'elysia'
import { createHash } from 'node:crypto'

const LINKS = { docs: '/docs', openapi: '/openapi.json', admin: '/admin', health: '/healthz', ready: '/readyz', metrics: '/metrics' }

const STYLE = `:root{color-scheme:light dark;--fg:#1a1a1a;--muted:#5b6270;--bg:#fff;--panel:#f4f5f7;--line:#d8dbe0;--accent:#1d5fc4}
@media (prefers-color-scheme:dark){:root{--fg:#e8eaed;--muted:#a4abb6;--bg:#16181c;--panel:#202329;--line:#363a42;--accent:#7aa7ff}}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:40rem;margin:0 auto;padding:3rem 1.25rem}
h1{margin:0;font-size:1.75rem}h1 small{font-size:1rem;font-weight:400;color:var(--muted)}
p{color:var(--muted);margin:.5rem 0 1.5rem}
ul{list-style:none;margin:0;padding:0;display:grid;gap:.75rem}
a{display:block;padding:.85rem 1rem;border:1px solid var(--line);border-radius:8px;background:var(--panel);color:var(--fg);text-decoration:none}
a:hover{border-color:var(--accent)}a:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
a strong{display:block;color:var(--accent)}a span{color:var(--muted);font-size:.9rem}
code{font-size:.85em}`
// The page's only style, allowed by its hash: the page runs no script and loads nothing else.
const CSP = `default-src 'none'; style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`

function page(version: string, demo: boolean): string {
  const items = [
    ['/admin', 'Admin dashboard', 'Triage reports, manage Apps, keys, webhooks and the audit log'],
    ...(demo ? [['/demo', 'Widget demo', 'A page with the feedback widget: send a report and find it in the dashboard']] : []),
    ['/docs', 'API reference', 'Every route, interactive'],
    ['/openapi.json', 'OpenAPI document', 'The same reference, for tools'],
    ['/readyz', 'Readiness', 'Is this server ready to take traffic?'],
  ]
    .map(([href, label, what]) => `<li><a href="${href}"><strong>${label}</strong><span>${what} · <code>${href}</code></span></a></li>`)
    .join('')
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>fixloop</title><link rel="icon" href="/favicon.ico"><style>${STYLE}</style></head><body><main><h1>fixloop <small>${version}</small></h1><p>Self-hosted feedback intake and triage. The API lives under <code>/v1</code>.</p><ul>${items}</ul></main></body></html>`
}

/** `demo`: `fixloop serve --demo` serves /demo, so the page and the JSON link it. */
export function rootRoutes(version: string, demo = false) {
  const links = demo ? { ...LINKS, demo: '/demo' } : LINKS
  const html = page(version, demo)
  return new Elysia({ name: 'root' }).get(
    '/',
    ({ request, set }) => {
      // One URL, two answers chosen by Accept: a cache in front must keep them apart.
      set.headers.vary = 'Accept'
      if ((request.headers.get('accept') ?? '').includes('text/html')) {
        set.headers['content-type'] = 'text/html; charset=utf-8'
        set.headers['content-security-policy'] = CSP
        // On the dashboard's origin, so held to its pages' rules: frame-ancestors says it to current
        // browsers, X-Frame-Options to older ones and scanners; no Referer leaves it.
        set.headers['x-frame-options'] = 'DENY'
        set.headers['referrer-policy'] = 'no-referrer'
        return html
      }
      return { name: 'fixloop' as const, version, links }
    },
    {
      response: {
        200: t.Union([
          t.Object({ name: t.Literal('fixloop'), version: t.String(), links: t.Record(t.String(), t.String()) }),
          t.String({ description: 'HTML page with the same links (Accept: text/html)' }),
        ]),
      },
      detail: { summary: 'Links to the docs, the OpenAPI document and the admin dashboard (and /demo under serve --demo)', tags: ['operations'] },
    },
  )
}
