/**
 * GET /demo (only under `fixloop serve --demo`): docs/widget-demo.html with the demo App's public key,
 * served under the strict CSP docs/widget.md recommends, so the demo also proves the widget needs no
 * 'unsafe-inline'.
 */
import { Elysia } from 'elysia'
import demoHtml from '../../docs/widget-demo.html' with { type: 'text' }

/** Imported as text (TypeScript types an .html import as a bundle). */
const page = demoHtml as unknown as string

export function demoPage(publicKey: () => string | undefined) {
  return new Elysia({ name: 'demo-page' }).get(
    '/demo',
    ({ request }) => {
      const nonce = Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString('base64')
      const origin = new URL(request.url).origin
      const html = page.replaceAll('{{NONCE}}', nonce).replaceAll('{{ENDPOINT}}', '').replaceAll('{{PUBLIC_KEY}}', publicKey() ?? '')
      const csp = `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'self'; connect-src ${origin}; img-src ${origin} data: blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`
      // It shares the dashboard's origin: the dashboard pages' framing and Referer rules (docs/security.md).
      return new Response(html, { headers: { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': csp, 'x-frame-options': 'DENY', 'referrer-policy': 'no-referrer', 'cache-control': 'no-store' } })
    },
    { detail: { summary: 'Widget demo page (serve --demo only)', tags: ['Widget'], responses: { 200: { description: 'HTML' } } } },
  )
}
