/**
 * If-None-Match as RFC 9110 13.1.2 reads it: "*" or a list of entity tags, compared weakly (W/"x" matches
 * "x"). Compared as one exact string, a revalidation through nginx's gzip (which turns a strong ETag weak)
 * or from a cache sending several tags was answered with the whole body every time.
 */
export function noneMatch(header: string | null, etag: string): boolean {
  if (header === null) return false
  if (header.trim() === '*') return true
  const opaque = etag.replace(/^W\//, '')
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === opaque)
}
