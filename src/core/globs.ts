/**
 * Path globs for the agent's deny-list (`--deny-paths`): Bun.Glob's matcher, plus the checks that refuse
 * a pattern before it is stored (one that cannot match anything would silently protect nothing).
 */

/**
 * True when `path` (relative, `/`-separated) matches the glob: Bun.Glob syntax (`*`, `**`, `?`,
 * `[abc]`, `{a,b}`), where a leading `**\/` also matches at the top level.
 */
export function globMatches(glob: string, path: string): boolean {
  if (new Bun.Glob(glob).match(path)) return true
  return glob.startsWith('**/') && new Bun.Glob(glob.slice(3)).match(path)
}

/**
 * Why a deny-path pattern is refused, or null: empty, absolute, `..`, control characters, or a
 * pattern that cannot match any path (an unclosed `[` or `{`).
 */
export function denyPatternProblem(glob: string): string | null {
  if (glob.trim() === '') return 'an empty pattern'
  if (/[\x00-\x1f\x7f]/.test(glob)) return `"${JSON.stringify(glob).slice(1, -1)}" contains control characters`
  if (glob.startsWith('/')) return `"${glob}" is absolute: patterns are relative to the repository root`
  if (glob.split('/').includes('..')) return `"${glob}" contains ..`
  if (glob.length > 500) return 'a pattern longer than 500 characters'
  let depth = 0
  let inClass = false
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]
    if (c === '\\') i++
    else if (inClass) inClass = c !== ']'
    else if (c === '[') inClass = true
    else if (c === '{') depth++
    else if (c === '}') depth = Math.max(0, depth - 1)
  }
  if (inClass || depth > 0) return `"${glob}" has an unclosed ${inClass ? '[' : '{'} and cannot match any path`
  return null
}

