/**
 * A bounded, side-effect-free text summary of one logged value (plain data reads as JSON), built at
 * log time like a devtools preview. It never calls page code: no getters (accessor properties show as `[Getter]`), no toJSON,
 * no toString; it reads own data properties through their descriptors, walks lazily (a million-element
 * array costs as much as a ten-element one) and stops at MAX_DEPTH levels, MAX_KEYS entries per object,
 * MAX_NODES values and `budget` characters overall. A Proxy's traps may run (ownKeys,
 * getOwnPropertyDescriptor, getPrototypeOf), its `get` trap never does; a trap that throws ends that
 * part of the summary, not the page's log call.
 */
import { clip } from './clip'

const MAX_DEPTH = 3
const MAX_KEYS = 20
const MAX_NODES = 200

interface Walk {
  out: string
  budget: number
  nodes: number
  seen: object[]
}

const { getOwnPropertyDescriptor: descriptor, getPrototypeOf } = Object

/** A property's descriptor, own or inherited (a few levels up). */
function find(obj: object, key: PropertyKey): PropertyDescriptor | undefined {
  for (let o: object | null = obj, i = 0; o && i < 8; o = getPrototypeOf(o), i++) {
    const d = descriptor(o, key)
    if (d) return d
  }
  return undefined
}

/** A data property's value (own or inherited); undefined for accessors, which are never called. */
function dataValue(obj: object, key: PropertyKey): unknown {
  const d = find(obj, key)
  return d && 'value' in d ? d.value : undefined
}

/** The engine's own `stack` accessor (V8 puts one on every error): the one getter that may be called. */
const engineStack = find(new Error(), 'stack')?.get

function stackOf(err: Error): unknown {
  const d = find(err, 'stack')
  return d && ('value' in d ? d.value : d.get && d.get === engineStack ? d.get.call(err) : undefined)
}

function typeName(obj: object): string {
  try {
    const ctor = dataValue(obj, 'constructor')
    const name = typeof ctor === 'function' ? dataValue(ctor, 'name') : undefined
    return typeof name === 'string' ? name : ''
  } catch {
    return ''
  }
}

function emit(w: Walk, text: string): boolean {
  if (w.out.length >= w.budget) return false
  w.out += text.length > w.budget - w.out.length ? clip(text, w.budget - w.out.length) + '…' : text
  return w.out.length < w.budget
}

function entries(w: Walk, obj: object, depth: number): void {
  // for-in would collect every key first; Reflect.ownKeys on an array of a million elements too,
  // so arrays walk their indices, everything else its own keys (capped).
  const isArray = Array.isArray(obj)
  const length = isArray ? Number(dataValue(obj, 'length')) || 0 : 0
  const keys = isArray ? null : Reflect.ownKeys(obj).filter((k): k is string => typeof k === 'string')
  const total = isArray ? length : keys!.length
  emit(w, isArray ? '[' : '{')
  let shown = 0
  for (; shown < total && shown < MAX_KEYS; shown++) {
    if (shown && !emit(w, ',')) return
    const k = isArray ? String(shown) : keys![shown]
    if (!isArray) emit(w, JSON.stringify(k) + ':')
    const d = descriptor(obj, k)
    if (!d) emit(w, isArray ? '<empty>' : 'undefined')
    else if (!('value' in d)) emit(w, d.set && !d.get ? '[Setter]' : '[Getter]')
    else value(w, d.value, depth + 1)
    if (w.out.length >= w.budget) return
  }
  if (total > shown) emit(w, `${shown ? ',' : ''}… ${total - shown} more`)
  emit(w, isArray ? ']' : '}')
}

function value(w: Walk, v: unknown, depth: number): void {
  try {
    walk(w, v, depth)
  } catch {
    // A Proxy trap (or an exotic object, e.g. a revoked Proxy) threw: that part of the summary ends here.
    emit(w, '[unreadable]')
  }
}

function walk(w: Walk, v: unknown, depth: number): void {
  if (++w.nodes > MAX_NODES) return void emit(w, '…')
  switch (typeof v) {
    case 'string':
      return void emit(w, depth ? JSON.stringify(clip(v, w.budget)) : v)
    case 'number':
    case 'boolean':
    case 'undefined':
      return void emit(w, String(v))
    case 'bigint':
      return void emit(w, `${v}n`)
    case 'symbol':
      return void emit(w, String(v))
    case 'function':
      return void emit(w, `[Function ${String(dataValue(v, 'name') ?? '') || '(anonymous)'}]`)
  }
  if (v === null) return void emit(w, 'null')
  const obj = v as object
  if (w.seen.includes(obj)) return void emit(w, '[Circular]')
  if (obj instanceof Error) {
    const message = dataValue(obj, 'message')
    const stack = stackOf(obj)
    return void emit(w, `${typeName(obj) || 'Error'}: ${typeof message === 'string' ? message : ''}${typeof stack === 'string' ? '\n' + stack : ''}`)
  }
  if (typeof Node !== 'undefined' && obj instanceof Node) {
    const tag = descriptor(Node.prototype, 'nodeName')!.get!.call(obj)
    return void emit(w, `[${typeName(obj) || 'Node'}${typeof tag === 'string' ? ' ' + tag.toLowerCase() : ''}]`)
  }
  if (obj instanceof Map || obj instanceof Set) {
    // Only the size (a builtin getter): walking entries would grow the loader for little.
    const size = descriptor(obj instanceof Map ? Map.prototype : Set.prototype, 'size')!.get!.call(obj)
    return void emit(w, `${obj instanceof Map ? 'Map' : 'Set'}(${size})`)
  }
  if (ArrayBuffer.isView(obj)) return void emit(w, `${typeName(obj) || 'TypedArray'}(${dataValue(obj, 'length') ?? ''})`)
  if (depth >= MAX_DEPTH) return void emit(w, Array.isArray(obj) ? '[…]' : '{…}')
  const name = Array.isArray(obj) ? '' : typeName(obj)
  if (name && name !== 'Object') emit(w, name + ' ')
  w.seen.push(obj)
  try {
    entries(w, obj, depth)
  } finally {
    w.seen.pop()
  }
}

/** The summary of one console argument, at most `budget` characters (plus an ellipsis). */
export function summarize(v: unknown, budget: number): string {
  const w: Walk = { out: '', budget, nodes: 0, seen: [] }
  value(w, v, 0)
  return w.out
}
