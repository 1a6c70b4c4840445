/**
 * Setting a member of an object rebuilt from parsed JSON. `out[key] = v` is wrong for one key:
 * `"__proto__"`, which JSON.parse makes an own member but assignment turns into the object's prototype.
 * A rebuilt body then lost the member (strict validation, which refuses `__proto__` as an unknown field,
 * no longer saw it) and its members became inherited ones every `body.x` read (`{"__proto__":
 * {"publicSubmissionEnabled": true}}` changed an App while the audit's own-key list did not name it).
 * Defined as an own data member, `__proto__` stays what JSON.parse made it.
 */
export function setJsonMember(out: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true })
  else out[key] = value
}
