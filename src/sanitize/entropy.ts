/**
 * Shannon entropy, the measure gitleaks uses to tell a real random secret from a placeholder with the
 * right prefix (`sk_test_xxxxxxxx`, `ghp_000…`). Random tokens of 16+ characters score well above the
 * floors the rules set; repeated or patterned fillers score near zero.
 */

/** Bits per character of `s` (0 for an empty or single-symbol string). */
export function shannonEntropy(s: string): number {
  if (s.length === 0) return 0
  const freq = new Map<string, number>()
  for (const ch of s) freq.set(ch, (freq.get(ch) ?? 0) + 1)
  let h = 0
  for (const n of freq.values()) {
    const p = n / s.length
    h -= p * Math.log2(p)
  }
  return h
}

/** Words that mark a documentation example or template rather than a live credential. */
const PLACEHOLDER = /x{5,}|\*{3,}|0{8,}|your|example|sample|placeholder|dummy|changeme|redacted|<[^>]*>|\$\{|\{\{/i

/**
 * True when `secret` (the random part of a token, after its vendor prefix) is too regular to be a real
 * credential: entropy below `floor` bits per character, or a placeholder word.
 */
export function isPlaceholder(secret: string, floor: number): boolean {
  return shannonEntropy(secret) < floor || PLACEHOLDER.test(secret)
}
