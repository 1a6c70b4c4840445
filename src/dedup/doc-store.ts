/**
 * Columnar storage of an App index's reports: one growable typed array per field instead of an object
 * (with its own typed arrays, array and set) per report. 100k reports as objects were 1.2M heap objects,
 * and every garbage collection of the process walked them, slowing all requests (measured ~20% on list
 * reads); as columns they are a few dozen objects plus the id strings.
 */
import type { Features } from './features'
import { STORED_TITLE_CHARS, titleKey } from './title-key'

export interface DocView {
  id: string
  title: string
  firstNumbers: readonly string[]
  versions: ReadonlySet<string>
  polarity: 'many' | 'none' | null
  distinctWords: number
  page: string | null
  component: string | null
  errorFps: readonly string[]
  stackFp: string | null
  leadId: string | null
}

const NO_NUMBERS: readonly string[] = Object.freeze([])
const NO_VERSIONS: ReadonlySet<string> = new Set()
const POLARITY = [null, 'many', 'none'] as const

function grow<T extends Int32Array | Float32Array | Uint16Array | Uint8Array>(a: T, need: number): T {
  if (need <= a.length) return a
  const next = new (a.constructor as new (n: number) => T)(Math.max(need, a.length * 2))
  next.set(a)
  return next
}

export class DocStore {
  /** All reports' term ids and weighted term frequencies, back to back; a report is a range. */
  private termPool = new Int32Array(1 << 14)
  private tfPool = new Float32Array(1 << 14)
  private poolUsed = 0
  private start = new Int32Array(1024)
  private length = new Uint16Array(1024)
  private alive = new Uint8Array(1024)
  private polarity = new Uint8Array(1024)
  private distinct = new Uint16Array(1024)
  private ids: string[] = []
  /** Title lines, for the templated-sibling veto (a few dozen characters each). */
  private titles: string[] = []
  /** Each title's key (title-key.ts), so the title counts are read without hashing the title again. */
  private titleKeys: number[] = []
  private leadIds: (string | null)[] = []
  /** Rarely set fields, by slot, only where present. */
  private numbers = new Map<number, readonly string[]>()
  private versionSets = new Map<number, ReadonlySet<string>>()
  /** Where a pasted stack trace failed (most reports hold none). */
  private stacks = new Map<number, string>()
  private pages: (string | null)[] = []
  private components: (string | null)[] = []
  /** Console-error fingerprints, newest first (most reports hold none). */
  private errors = new Map<number, readonly string[]>()
  /** Repeated strings (page, component, error) are stored once. */
  private interned = new Map<string, string>()

  get slots(): number {
    return this.ids.length
  }

  private intern(s: string | null): string | null {
    if (s === null) return null
    const hit = this.interned.get(s)
    if (hit !== undefined) return hit
    this.interned.set(s, s)
    return s
  }

  push(f: Features, termIds: number[], tfs: number[], leadId: string | null): number {
    const slot = this.ids.length
    const n = slot + 1
    this.start = grow(this.start, n)
    this.length = grow(this.length, n)
    this.alive = grow(this.alive, n)
    this.polarity = grow(this.polarity, n)
    this.distinct = grow(this.distinct, n)
    this.termPool = grow(this.termPool, this.poolUsed + termIds.length)
    this.tfPool = grow(this.tfPool, this.poolUsed + termIds.length)
    this.start[slot] = this.poolUsed
    this.length[slot] = Math.min(termIds.length, 65535)
    for (let i = 0; i < this.length[slot]; i++) {
      this.termPool[this.poolUsed + i] = termIds[i]
      this.tfPool[this.poolUsed + i] = tfs[i]
    }
    this.poolUsed += this.length[slot]
    this.alive[slot] = 1
    this.polarity[slot] = f.polarity === 'many' ? 1 : f.polarity === 'none' ? 2 : 0
    this.distinct[slot] = Math.min(f.distinctWords, 65535)
    this.ids.push(f.id)
    this.titles.push(f.title.slice(0, STORED_TITLE_CHARS))
    this.titleKeys.push(titleKey(f.title))
    this.leadIds.push(leadId)
    if (f.firstNumbers.length > 0) this.numbers.set(slot, f.firstNumbers)
    if (f.versions.size > 0) this.versionSets.set(slot, f.versions)
    this.pages.push(this.intern(f.page))
    this.components.push(this.intern(f.component))
    if (f.errorFps.length > 0) this.errors.set(slot, f.errorFps.map((e) => this.intern(e)!))
    if (f.stackFp) this.stacks.set(slot, this.intern(f.stackFp)!)
    return slot
  }

  /** 1 per live slot, 0 per removed one (read it again after a push: it may have grown). For hot loops. */
  get aliveFlags(): Uint8Array {
    return this.alive
  }

  isAlive(slot: number): boolean {
    return this.alive[slot] === 1
  }

  /** Frees a slot's fields; its terms stay in the pool (reclaimed only by a rebuild). */
  kill(slot: number): void {
    this.alive[slot] = 0
    this.numbers.delete(slot)
    this.versionSets.delete(slot)
    this.stacks.delete(slot)
    this.titles[slot] = ''
    this.errors.delete(slot)
    this.pages[slot] = this.components[slot] = this.leadIds[slot] = null
  }

  id(slot: number): string {
    return this.ids[slot]
  }

  leadId(slot: number): string | null {
    return this.leadIds[slot]
  }

  setLeadId(slot: number, leadId: string | null): void {
    this.leadIds[slot] = leadId
  }

  /** Where the report's words start in `terms`/`tfs` (they end at `termsEnd`). For hot loops. */
  termsStart(slot: number): number {
    return this.start[slot]
  }

  termsEnd(slot: number): number {
    return this.start[slot] + this.length[slot]
  }

  /** Every report's term ids, back to back (read it again after a push: it may have grown). */
  get terms(): Int32Array {
    return this.termPool
  }

  /** Every report's term weights, in step with `terms`. */
  get tfs(): Float32Array {
    return this.tfPool
  }

  /** Calls `fn(termId, tf)` for each word of the report. */
  eachTerm(slot: number, fn: (termId: number, tf: number) => void): void {
    const from = this.start[slot]
    const to = from + this.length[slot]
    for (let i = from; i < to; i++) fn(this.termPool[i], this.tfPool[i])
  }

  /** The key of the report's title (title-key.ts). */
  titleKey(slot: number): number {
    return this.titleKeys[slot]
  }

  view(slot: number): DocView {
    return {
      id: this.ids[slot],
      title: this.titles[slot],
      firstNumbers: this.numbers.get(slot) ?? NO_NUMBERS,
      versions: this.versionSets.get(slot) ?? NO_VERSIONS,
      polarity: POLARITY[this.polarity[slot]],
      distinctWords: this.distinct[slot],
      page: this.pages[slot],
      component: this.components[slot],
      errorFps: this.errors.get(slot) ?? NO_NUMBERS,
      stackFp: this.stacks.get(slot) ?? null,
      leadId: this.leadIds[slot],
    }
  }
}
