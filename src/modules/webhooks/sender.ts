/**
 * One HTTP attempt of a webhook delivery. Connects only to the addresses the SSRF guard checked (a
 * pinned `lookup`, so TLS still verifies the real host name), follows no redirect (a 3xx is a failed
 * attempt), gives up after the timeout, and keeps only the first 4 KB of the answer.
 */
import type { LookupFunction } from 'node:net'
import { httpClientFor } from '../../core/node-http'
import type { CheckedTarget } from './ssrf'

export const RESPONSE_KEEP_BYTES = 4096

export interface AttemptResult {
  status: number | null
  headers: Record<string, string>
  /** First 4 KB of the body, as text. */
  body: string | null
  error: string | null
  latencyMs: number
}

function pinnedLookup(target: CheckedTarget): LookupFunction {
  return ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, target.addresses)
    else callback(null, target.addresses[0].address, target.addresses[0].family)
  }) as unknown as LookupFunction
}

export async function postOnce(target: CheckedTarget, headers: Record<string, string>, body: string, timeoutMs: number): Promise<AttemptResult> {
  // Loaded at the first delivery (node-http.ts), before the attempt's clock starts.
  const lib = await httpClientFor(target.url.protocol)
  const started = performance.now()
  return new Promise((resolve) => {
    let done = false
    const finish = (r: Omit<AttemptResult, 'latencyMs'>) => {
      if (done) return
      done = true
      clearTimeout(timer)
      resolve({ ...r, latencyMs: Math.round(performance.now() - started) })
    }
    const req = lib.request(
      target.url,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        lookup: pinnedLookup(target),
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = []
        let kept = 0
        const respHeaders: Record<string, string> = {}
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') respHeaders[k] = v
        const complete = () =>
          finish({ status: res.statusCode ?? null, headers: respHeaders, body: Buffer.concat(chunks).subarray(0, RESPONSE_KEEP_BYTES).toString('utf8'), error: null })
        res.on('data', (chunk: Buffer) => {
          if (kept < RESPONSE_KEEP_BYTES) {
            chunks.push(chunk)
            kept += chunk.length
          }
          // Enough kept: the rest of a large answer is not read.
          if (kept >= RESPONSE_KEEP_BYTES) {
            complete()
            res.destroy()
          }
        })
        res.on('end', complete)
        res.on('error', complete)
      },
    )
    const timer = setTimeout(() => {
      finish({ status: null, headers: {}, body: null, error: `timeout: no answer in ${timeoutMs} ms` })
      req.destroy()
    }, timeoutMs)
    req.on('error', (e: NodeJS.ErrnoException) => finish({ status: null, headers: {}, body: null, error: `connection failed: ${e.code ?? e.message}` }))
    req.end(body)
  })
}
