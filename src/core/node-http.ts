/**
 * node:http or node:https, loaded at the first outbound call that needs it. Evaluating them (with the
 * node:net and stream modules under them) took ~10 ms CPU of every CLI command and server start, most of
 * which never make such a call (fixloop serves with Bun.serve). The webhook sender and the bounded
 * outbound client (outbound-http.ts) take them from here.
 */
export async function httpClientFor(protocol: 'http:' | 'https:' | string) {
  return protocol === 'https:' ? (await import('node:https')).default : (await import('node:http')).default
}
