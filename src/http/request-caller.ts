/**
 * Whom a request acted for (its Org and App), noted by the authentication step and read by the request
 * log line (http/foundation.ts). Ids only: the credential that proved it is never kept here.
 */
export interface RequestCaller {
  orgId?: string
  appId?: string
}

const callers = new WeakMap<Request, RequestCaller>()

export function noteCaller(request: Request, caller: RequestCaller): void {
  callers.set(request, caller)
}

export function callerOf(request: Request): RequestCaller | undefined {
  return callers.get(request)
}
