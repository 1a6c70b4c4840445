/**
 * How many bytes of JSON request bodies the server holds while they arrive. A body is read whole before
 * it is parsed, validated and authenticated (a widget's public key is in every page anyway), so without
 * a bound anyone could open connections, send 8 MB less a byte on each and wait: every one held 8 MB of
 * the server's memory (an audit reached 900 MB with 100 connections from one address, and an
 * out-of-memory kill is a matter of connections). Each body now takes its size from two budgets before
 * a byte is read (its Content-Length, or chunk by chunk without one; a body of at most
 * UNCOUNTED_BODY_BYTES is not counted) and gives it back once parsed or refused:
 * - per client address (the rate limits' key, core/address-key.ts): FIXLOOP_BODY_BUFFER_PER_ADDRESS_MB,
 *   past it `429 rate_limited`;
 * - for the whole server: FIXLOOP_BODY_BUFFER_MB, past it 503 (`internal_error`, spec part 7's 5xx code).
 * Both with Retry-After. A body always fits when its address (or the server) holds none, so a limit set
 * below 8 MB never refuses a lone request.
 */
import { ApiError, serviceUnavailable } from '../core/errors'

const RETRY_AFTER_SECONDS = '1'

export class BodyBudget {
  private used = 0
  private readonly byAddress = new Map<string, number>()

  /** `total`, `perAddress`: bytes; 0 turns that budget off. */
  constructor(
    private readonly total: number,
    private readonly perAddress: number,
  ) {}

  /** Takes `bytes` for `address`, or throws (taking nothing) when a budget would be passed. */
  take(address: string, bytes: number): void {
    const mine = this.byAddress.get(address) ?? 0
    if (this.perAddress > 0 && mine > 0 && mine + bytes > this.perAddress) {
      throw new ApiError('rate_limited', { retryAfterSeconds: 1, limit: 'bytes of request bodies one client address may send at once (FIXLOOP_BODY_BUFFER_PER_ADDRESS_MB)' }).withHeaders({ 'retry-after': RETRY_AFTER_SECONDS })
    }
    if (this.total > 0 && this.used > 0 && this.used + bytes > this.total) {
      throw serviceUnavailable('too many request bodies are arriving at once (FIXLOOP_BODY_BUFFER_MB)', 'The server is receiving too many request bodies at once. Try again shortly.', 1)
    }
    this.used += bytes
    this.byAddress.set(address, mine + bytes)
  }

  give(address: string, bytes: number): void {
    this.used -= bytes
    const left = (this.byAddress.get(address) ?? 0) - bytes
    if (left > 0) this.byAddress.set(address, left)
    else this.byAddress.delete(address)
  }

  /** A holder for one request's share: what it took, given back at once by `release`. */
  ticket(addressOf: () => string): BodyTicket {
    let held = 0
    let address: string | undefined
    return {
      take: (bytes) => {
        // The address is worked out only for a body that counts: most never do (UNCOUNTED_BODY_BYTES).
        address ??= addressOf()
        this.take(address, bytes)
        held += bytes
      },
      release: () => {
        if (held > 0) this.give(address!, held)
        held = 0
      },
    }
  }
}

/**
 * A body that declares at most this many bytes is not counted: what it can hold is of the order of the
 * connection's own socket buffers (the kernel keeps ~128 KB per connection whatever the budget says), so
 * a widget submission skips the bookkeeping (its cost was within the intake bench's noise either way:
 * bench/README.md). Bodies of megabytes, or of unknown length (chunked), are what the budget is for.
 */
export const UNCOUNTED_BODY_BYTES = 64 * 1024

export interface BodyTicket {
  take(bytes: number): void
  release(): void
}

/**
 * The routes that read their raw body themselves (git-host and tracker webhooks, Slack commands: they
 * verify a signature over the exact bytes) get their request's ticket here from the parse hook, and
 * readBodyBounded (strict-json.ts) takes and gives back through it while it reads.
 */
const rawReaders = new WeakMap<Request, BodyTicket>()

export function lendTicket(request: Request, ticket: BodyTicket): void {
  rawReaders.set(request, ticket)
}

export function lentTicket(request: Request): BodyTicket | undefined {
  return rawReaders.get(request)
}
