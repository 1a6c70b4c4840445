/** s3rver ships no types; the tests use this much of it. */
declare module 's3rver' {
  interface S3rverOptions {
    port?: number
    address?: string
    silent?: boolean
    directory: string
    configureBuckets?: { name: string; configs?: unknown[] }[]
  }
  export default class S3rver {
    constructor(options: S3rverOptions)
    run(): Promise<{ address: string; port: number }>
    close(): Promise<void>
  }
}

declare module 'parse-prometheus-text-format' {
  /** Parses Prometheus text exposition format; throws on a malformed line. */
  export default function parsePrometheusTextFormat(text: string): unknown[]
}

/** aws4 ships no types; the S3 tests recompute presigned signatures with it (an independent SigV4). */
declare module 'aws4' {
  interface SignableRequest {
    host?: string
    path?: string
    method?: string
    service?: string
    region?: string
    signQuery?: boolean
    headers?: Record<string, string>
  }
  export function sign<T extends SignableRequest>(request: T, credentials: { accessKeyId: string; secretAccessKey: string }): T & { path: string }
}
