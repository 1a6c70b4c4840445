// The dashboard's only door to the server: the documented routes, with the session cookie, the CSRF
// token on mutations and, for /v1 routes, the Org in X-Fixloop-Org. Errors keep the API's envelope.

let csrfToken = ''

export function setCsrf(token) {
  csrfToken = token || ''
}

export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message)
    this.status = status
    this.code = code
    this.details = details
  }
}

export async function api(method, path, { body, org } = {}) {
  const headers = { accept: 'application/json' }
  if (body !== undefined) headers['content-type'] = 'application/json'
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken
  if (org) headers['x-fixloop-org'] = org
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin' })
  const text = await res.text()
  let json = null
  try {
    json = text ? JSON.parse(text) : null
  } catch {
    json = null
  }
  if (!res.ok) {
    const e = json && json.error ? json.error : { code: 'http_' + res.status, message: res.statusText }
    throw new ApiError(res.status, e.code, e.message, e.details)
  }
  return json
}

/** Query string from an object, leaving out empty values. */
export function qs(params) {
  const u = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') u.set(k, String(v))
  const s = u.toString()
  return s ? '?' + s : ''
}
