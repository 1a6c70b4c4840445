/**
 * GET /: where to go from the server's root. Browsers (Accept: text/html) get a small page with links;
 * everything else gets JSON with the same links.
 */
import { Elysia, t } from 'elysia'

const LINKS = { docs: '/docs', openapi: '/openapi.json', admin: '/admin', health: '/healthz', ready: '/readyz', metrics: '/metrics' }

function page(version: string): string {
  const items = [
    ['/docs', 'API reference (interactive)'],
    ['/openapi.json', 'OpenAPI document'],
    ['/admin', 'Admin dashboard'],
    ['/readyz', 'Readiness'],
  ]
    .map(([href, label]) => `<li><a href="${href}">${label}</a> <code>${href}</code></li>`)
    .join('')
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>fixloop</title></head><body><main><h1>fixloop ${version}</h1><p>Self-hosted feedback intake and triage. The API lives under <code>/v1</code>.</p><ul>${items}</ul></main></body></html>`
}

export function rootRoutes(version: string) {
  return new Elysia({ name: 'root' }).get(
    '/',
    ({ request, set }) => {
      if ((request.headers.get('accept') ?? '').includes('text/html')) {
        set.headers['content-type'] = 'text/html; charset=utf-8'
        return page(version)
      }
      return { name: 'fixloop' as const, version, links: LINKS }
    },
    {
      response: {
        200: t.Union([
          t.Object({ name: t.Literal('fixloop'), version: t.String(), links: t.Record(t.String(), t.String()) }),
          t.String({ description: 'HTML page with the same links (Accept: text/html)' }),
        ]),
      },
      detail: { summary: 'Links to the docs, the OpenAPI document and the admin dashboard', tags: ['operations'] },
    },
  )
}
