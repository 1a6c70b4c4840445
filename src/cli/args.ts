/**
 * Small helpers shared by the CLI commands: flag parsing with clear errors, output, exit codes.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util'

export class UsageError extends Error {}

export type FlagSpec = NonNullable<ParseArgsConfig['options']>

export const COMMON_FLAGS = {
  'data-dir': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies FlagSpec

export function parseFlags<T extends FlagSpec>(argv: string[], options: T) {
  try {
    return parseArgs({ args: argv, options: { ...COMMON_FLAGS, ...options }, allowPositionals: true, strict: true })
  } catch (e) {
    throw new UsageError((e as Error).message.replace(/^TypeError \[\w+\]: /, ''))
  }
}

export function parseBoolFlag(value: string | undefined, flag: string): boolean | undefined {
  if (value === undefined) return undefined
  if (value === 'true') return true
  if (value === 'false') return false
  throw new UsageError(`--${flag} must be true or false, got "${value}"`)
}

export function parseIntFlag(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined
  if (!/^-?\d+$/.test(value)) throw new UsageError(`--${flag} must be an integer, got "${value}"`)
  return Number(value)
}

export function parseList(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
}

/** Prints a result: one JSON object with --json, otherwise "key: value" lines. */
export function output(result: Record<string, unknown>, json: boolean | undefined): void {
  if (json) {
    process.stdout.write(JSON.stringify(result) + '\n')
    return
  }
  for (const [k, v] of Object.entries(result)) process.stdout.write(`${k}: ${typeof v === 'object' ? JSON.stringify(v) : String(v)}\n`)
}

/**
 * Glob list flags (`--deny-paths`), repeatable: each value is a JSON list (`'["a/**", "b/*.{key,pem}"]'`)
 * or globs separated by commas OUTSIDE braces and brackets, so `src/**\/*.{key,pem}` stays one pattern.
 */
export function parseGlobList(values: string | string[] | undefined, flag: string): string[] | undefined {
  if (values === undefined) return undefined
  const out: string[] = []
  for (const value of Array.isArray(values) ? values : [values]) {
    if (value.trim().startsWith('[')) {
      let list: unknown
      try {
        list = JSON.parse(value)
      } catch {
        throw new UsageError(`--${flag}: not a valid JSON list: ${value}`)
      }
      if (!Array.isArray(list) || !list.every((g) => typeof g === 'string')) throw new UsageError(`--${flag}: the JSON list must hold strings only`)
      out.push(...list)
      continue
    }
    let depth = 0
    let current = ''
    for (let i = 0; i < value.length; i++) {
      const c = value[i]
      if (c === '\\' && i + 1 < value.length) {
        current += c + value[++i]
        continue
      }
      if (c === '{' || c === '[') depth++
      else if ((c === '}' || c === ']') && depth > 0) depth--
      if (c === ',' && depth === 0) {
        out.push(current)
        current = ''
      } else current += c
    }
    out.push(current)
  }
  return out.map((g) => g.trim()).filter(Boolean)
}
