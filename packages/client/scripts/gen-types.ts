/**
 * Regenerates src/openapi.ts from the server's own /openapi.json, so the client's types follow the API.
 *   bun packages/client/scripts/gen-types.ts          writes the file
 *   bun packages/client/scripts/gen-types.ts --check  exits 1 when the committed file is stale (CI)
 * The server runs in-process on a throw-away data dir; nothing leaves loopback.
 */
import { compile, type JSONSchema } from 'json-schema-to-typescript'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../../src/config'
import { startServer } from '../../../src/runtime/server'
import { Logger } from '../../../src/core/logger'

const out = join(import.meta.dir, '..', 'src', 'openapi.ts')
const dataDir = mkdtempSync(join(tmpdir(), 'fixloop-client-types-'))
const server = await startServer(loadConfig({ host: '127.0.0.1', port: '0', dataDir }, { FIXLOOP_LOG_LEVEL: 'silent' }), {
  log: new Logger('silent'),
  worker: { autoStart: false },
})
let spec: Record<string, unknown>
try {
  spec = (await (await fetch(`${server.url}/openapi.json`)).json()) as Record<string, unknown>
} finally {
  await server.stop()
  rmSync(dataDir, { recursive: true, force: true })
}
// The version changes with every release; it must not make the generated types stale.
;(spec.info as Record<string, unknown>).version = '0'

/**
 * The named types the client exposes, by operation. An operation the server does not serve (yet) is
 * reported and skipped; the check fails then, so a renamed route cannot slip by.
 */
const OPERATIONS: Record<string, { response?: string; body?: string; query?: string }> = {
  'GET /v1/apps': { response: 'AppList' },
  'POST /v1/feedback': { body: 'FeedbackSubmitParams', response: 'FeedbackSubmitResult' },
  'POST /v1/feedback/upload-url': { body: 'UploadUrlParams', response: 'UploadUrl' },
  'GET /v1/feedback': { query: 'FeedbackListParams', response: 'FeedbackPage' },
  'GET /v1/feedback/{id}': { response: 'FeedbackItem' },
  'PATCH /v1/feedback/{id}': { body: 'FeedbackUpdateParams', response: 'FeedbackUpdateResult' },
  'GET /v1/feedback/{id}/similar': { query: 'SimilarParams', response: 'SimilarList' },
  'POST /v1/feedback/{id}/merge': { body: 'MergeParams' },
  'GET /v1/apps/{id}/triage': { response: 'AppTriageState' },
  'GET /v1/agent-runs/{id}': { response: 'AgentRun' },
  'GET /v1/feedback/{id}/agent-runs': { response: 'AgentRunList' },
  'POST /v1/tokens/mint': { body: 'MintParams', response: 'MintResult' },
  'GET /v1/events': { query: 'EventListQuery', response: 'EventPage' },
  'POST /v1/webhooks': { body: 'WebhookCreateParams', response: 'WebhookCreated' },
  'GET /v1/webhooks': { response: 'WebhookList' },
  'GET /v1/webhooks/{id}': { response: 'Webhook' },
  'POST /v1/webhooks/{id}/rotate-secret': { response: 'WebhookSecretRotated' },
  'POST /v1/webhooks/{id}/test': { response: 'WebhookTestSent' },
  'GET /v1/webhooks/{id}/deliveries': { query: 'DeliveryListParams', response: 'DeliveryPage' },
  'POST /v1/webhooks/{id}/redeliver-failed': { body: 'RedeliverFailedParams', response: 'RedeliverFailedResult' },
  'POST /v1/webhooks/deliveries/{id}/redeliver': { response: 'RedeliverResult' },
}

type Operation = {
  parameters?: { name: string; in: string; required?: boolean; schema: JSONSchema; description?: string }[]
  requestBody?: { content: Record<string, { schema: JSONSchema }> }
  responses: Record<string, { content?: Record<string, { schema: JSONSchema }> }>
}
const paths = spec.paths as Record<string, Record<string, Operation>>
const options = { bannerComment: '', additionalProperties: false, strictIndexSignatures: true, format: true, maxItems: -1 } as const
const missing: string[] = []
const chunks: string[] = []
for (const [key, names] of Object.entries(OPERATIONS)) {
  const [method, path] = key.split(' ')
  const op = paths[path]?.[method.toLowerCase()]
  if (!op) {
    missing.push(key)
    continue
  }
  const ok = Object.entries(op.responses).find(([status]) => status.startsWith('2'))?.[1]
  if (names.response && ok?.content) chunks.push(await compile(ok.content['application/json'].schema, names.response, options))
  if (names.body && op.requestBody) chunks.push(await compile(op.requestBody.content['application/json'].schema, names.body, options))
  if (names.query) {
    const query = (op.parameters ?? []).filter((p) => p.in === 'query')
    const schema: JSONSchema = {
      type: 'object',
      additionalProperties: false,
      required: query.filter((p) => p.required).map((p) => p.name),
      properties: Object.fromEntries(query.map((p) => [p.name, { ...simplifyQuery(p.schema), description: p.description ?? p.schema.description }])),
    }
    chunks.push(await compile(schema, names.query, options))
  }
}
if (missing.length) console.error(`not served by this server (skipped): ${missing.join(', ')}`)

/** Query strings are strings on the wire; the client takes the typed form (number, boolean). */
function simplifyQuery(schema: JSONSchema): JSONSchema {
  const typed = schema.anyOf?.find((s) => typeof s === 'object' && s.type !== 'string')
  const { anyOf: _anyOf, ...rest } = schema
  return typed && typeof typed === 'object' ? { ...rest, ...typed } : schema
}

const header = "/**\n * Generated from the server's /openapi.json by scripts/gen-types.ts: do not edit by hand.\n */\n/* eslint-disable */\n\n"
// Elysia documents a numeric response field as "a number or a numeric string"; the server always sends a number.
const text = header + chunks.join('\n').replaceAll('(number & string) | number', 'number')

if (process.argv.includes('--check')) {
  const current = readFileSync(out, 'utf8')
  if (current !== text || missing.length) {
    console.error('packages/client/src/openapi.ts is stale: run `bun packages/client/scripts/gen-types.ts` and commit it')
    process.exit(1)
  }
  console.log('client types are up to date with /openapi.json')
} else {
  writeFileSync(out, text)
  console.log(`wrote ${out}`)
}
process.exit(0)
