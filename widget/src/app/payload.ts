/** The JSON payload of one report from the page's context, bounded as spec 2.3 says. */
import type { Core, SubmitPayload } from '../types'
import { scrub } from '../scrub'
import { clip } from '../clip'
import { stringify } from '../json'

const METADATA_BUDGET = 4000 // bytes of JSON; the server's limit is 4096

const bytes = (v: unknown): number => new TextEncoder().encode(stringify(v)).length

/** Customer metadata plus the failed/slow request summary, trimmed (oldest requests first) to fit 4 KB. */
export function boundedMetadata(custom: Record<string, unknown> | undefined, network: unknown[]): Record<string, unknown> | undefined {
  const meta: Record<string, unknown> = { ...(custom ?? {}) }
  const requests = network.slice()
  if (requests.length) meta.network = requests
  while (requests.length && bytes(meta) > METADATA_BUDGET) requests.shift()
  if (!requests.length) delete meta.network
  for (const key of Object.keys(meta)) {
    if (bytes(meta) <= METADATA_BUDGET) break
    if (key !== 'network') delete meta[key]
  }
  return Object.keys(meta).length ? meta : undefined
}

export function buildPayload(core: Core, text: string, componentTarget?: SubmitPayload['componentTarget']): SubmitPayload {
  const { options } = core
  const payload: SubmitPayload = {
    text: clip(text, 8192),
    url: clip(scrub(location.href), 2048),
    userAgent: navigator.userAgent.slice(0, 512),
    viewport: { w: innerWidth, h: innerHeight, dpr: devicePixelRatio || 1 },
    consoleLogs: core.consoleLogs().slice(-500),
  }
  const metadata = boundedMetadata(options.metadata, core.network())
  if (metadata) payload.metadata = metadata
  if (componentTarget) payload.componentTarget = componentTarget
  if (options.identity && !options.getUserToken) payload.identity = options.identity
  return payload
}

/** A random Idempotency-Key (crypto.randomUUID needs a secure context; getRandomValues does not). */
export function newIntentKey(): string {
  const b = crypto.getRandomValues(new Uint8Array(16))
  return 'fl-' + [...b].map((x) => x.toString(16).padStart(2, '0')).join('')
}
