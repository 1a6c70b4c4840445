/**
 * JSON.stringify that ignores a toJSON the page's libraries put on Array.prototype or Object.prototype.
 * Prototype.js 1.6 (still on old shops and trackers) defines Array#toJSON returning a string, so the
 * native call turned every array of a report (console lines, attachments, rrweb events) into a string
 * and the server refused the body. JSON.stringify calls toJSON before the replacer, and the replacer
 * sees the holder: a plain array or object is given back as the data it is (its items are then
 * serialized one by one, each through the replacer again). Other objects keep their own toJSON. On a
 * page that added none (nearly all), the native call without a replacer: a replay is megabytes of JSON.
 */
const plain = (v: unknown): boolean => {
  if (Array.isArray(v)) return true
  if (v === null || typeof v !== 'object') return false
  const proto = Object.getPrototypeOf(v)
  return proto === Object.prototype || proto === null
}

export const stringify = (value: unknown): string =>
  !('toJSON' in Array.prototype) && !('toJSON' in Object.prototype)
    ? JSON.stringify(value)
    : JSON.stringify(value, function (this: Record<string, unknown>, key: string, v: unknown) {
        const raw = this[key]
        return plain(raw) ? raw : v
      })
