/**
 * The path of a request URL, and what fixloop takes as a request's path at all.
 *
 * Bun builds `request.url` with the WHATWG URL parser: dot segments (and their %2e spellings) are resolved,
 * a `\` reads as `/`, the path ends at `#`. Other spellings are kept as sent (`//`, a trailing `/`, `%2F`,
 * `%6d`), and strict routing (app.ts) answers them 404: only the one canonical spelling reaches a route.
 * A proxy that matches paths must therefore see what Bun sees: nginx and Caddy resolve dot segments the
 * same way; nginx does not read `\` as `/`, so the shipped nginx.conf refuses it (docs/operations.md).
 *
 * When the Host header is not a valid host (`a/b`, `a b`), Bun hands over a bare path instead of an
 * absolute URL, and every "path after the host" computation would cut it in the wrong place.
 */

/** Is this the absolute http(s) URL Bun builds for a request with a usable Host? */
export function hasUsableHost(url: string): boolean {
  return url.startsWith('http://') || url.startsWith('https://')
}

/**
 * The path of an absolute request URL without building a URL object: hooks that run on every request
 * only need the path, and `new URL()` per hook was a measurable share of a submission's CPU. Equals
 * `new URL(url).pathname` for the URLs Bun builds (checked by hasUsableHost first, in foundation.ts).
 */
export function pathOfUrl(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  if (start === -1) return '/'
  const q = url.indexOf('?', start)
  return q === -1 ? url.slice(start) : url.slice(start, q)
}
