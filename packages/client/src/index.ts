/**
 * @fixloop/client — the typed client for fixloop's server-side API.
 *
 *   import { Fixloop } from '@fixloop/client'
 *   const fixloop = new Fixloop({ apiKey: process.env.FIXLOOP_API_KEY, baseUrl: 'https://fixloop.example.com' })
 *   for await (const item of fixloop.feedback.list({ status: 'awaiting_manual' })) console.log(item.id)
 */
export { Fixloop, type WaitForOptions } from './client.js'
export type { ClientOptions, FetchLike, RequestOptions, RetryInfo } from './core.js'
export {
  FixloopError,
  InvalidRequestError,
  AuthenticationError,
  PermissionDeniedError,
  NotFoundError,
  ConflictError,
  PayloadTooLargeError,
  RateLimitError,
  InternalServerError,
  ConnectionError,
  TimeoutError,
  StreamError,
  type ErrorCode,
} from './errors.js'
export { MAX_EVENT_CHARS } from './sse.js'
export { PagedList, type Page } from './paging.js'
export { signUserToken, type SignUserTokenParams } from './user-token.js'
export { verifyWebhook, WebhookVerificationError, type VerifyWebhookOptions } from './webhook.js'
export type * from './types.js'
