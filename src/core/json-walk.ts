/** The first place in a parsed JSON value that something is wrong with, as a JSON pointer. */

const pointerSegment = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1')

/**
 * The JSON pointer of the first value (depth first, in order) for which `valueHit` holds, or of the first
 * object key for which `keyHit` holds (a key is pointed at by its own path); undefined when none. The
 * whole value is `/`.
 */
export function firstPathWhere(value: unknown, valueHit: (v: unknown) => boolean, keyHit?: (key: string) => boolean, path = ''): string | undefined {
  if (valueHit(value)) return path || '/'
  if (value === null || typeof value !== 'object') return undefined
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = firstPathWhere(value[i], valueHit, keyHit, `${path}/${i}`)
      if (found) return found
    }
    return undefined
  }
  for (const [key, v] of Object.entries(value)) {
    const here = `${path}/${pointerSegment(key)}`
    if (keyHit?.(key)) return here
    const found = firstPathWhere(v, valueHit, keyHit, here)
    if (found) return found
  }
  return undefined
}
