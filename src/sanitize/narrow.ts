/**
 * Narrowing for detectors whose regex over-reaches: a run of digit groups, an IBAN running into the next
 * word, a run of hex and colons. Each trims the candidate to the real value or drops it (null); the
 * rule's guard then judges what is left.
 */
import { cardLength } from './cards'
import { ibanLength } from './iban'
import { parseIPv6 } from './ip'
import { phoneLength } from './phone'
import { reslice, type Candidate } from './rule'

/** Trims a run of digit groups to the longest prefix that is a valid card number. */
export function narrowCard(c: Candidate): Candidate {
  const n = cardLength(c.value)
  return n === 0 || n === c.value.length ? c : reslice(c, c.start, c.start + n)
}

/** Trims an IBAN candidate (which may run into the next word) to its country's length. */
export function narrowIban(c: Candidate): Candidate | null {
  const length = ibanLength(c.value.slice(0, 2))
  if (length === undefined) return null
  let seen = 0
  for (let i = 0; i < c.value.length; i++) {
    if (c.value[i] !== ' ') seen++
    if (seen === length) return /[A-Za-z0-9]/.test(c.value[i + 1] ?? '') ? null : reslice(c, c.start, c.start + i + 1)
  }
  return null
}

/** Trims a run of digit groups to the longest prefix shaped like a phone number. */
export function narrowPhone(c: Candidate): Candidate | null {
  const n = phoneLength(c.value)
  return n === 0 ? null : reslice(c, c.start, c.start + n)
}

/** A run of hex, colons and dots is an IPv6 address only if it parses as one. */
export function narrowIpv6(c: Candidate): Candidate | null {
  const value = c.value.replace(/\.+$/, '')
  if ((value.match(/:/g) ?? []).length < 2 || !parseIPv6(value)) return null
  return reslice(c, c.start, c.start + value.length)
}
