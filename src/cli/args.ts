/**
 * Small helpers shared by the CLI commands: flag parsing with clear errors, output, exit codes.
 */
import { readFileSync } from 'node:fs'
import { parseArgs, type ParseArgsConfig } from 'node:util'
import { NUL, NUL_MESSAGE } from '../core/nul'
import { didYouMean } from './suggest'
import { clip } from '../core/clip'
import { ApiError } from '../core/errors'

export class UsageError extends Error {}

export type FlagSpec = NonNullable<ParseArgsConfig['options']>

export const COMMON_FLAGS = {
  'data-dir': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies FlagSpec

export function parseFlags<T extends FlagSpec>(argv: string[], options: T) {
  const all = { ...COMMON_FLAGS, ...options }
  const args = joinNegativeValues(argv, all)
  let parsed
  try {
    parsed = parseArgs({ args, options: all, allowPositionals: true, strict: true, tokens: true })
  } catch (e) {
    const message = (e as Error).message.replace(/^TypeError \[\w+\]: /, '')
    // "Unknown option '--nmae'. To specify a positional…": keep the first sentence and suggest a known flag.
    const unknown = /^Unknown option '(-{1,2})([^']+)'/.exec(message)
    if (unknown) {
      const known = Object.keys(all)
      throw new UsageError(`unknown flag ${unknown[1]}${unknown[2]}.${didYouMean(unknown[2], known, '--')} Run with --help for the flags.`)
    }
    throw new UsageError(missingValueMessage(message, args) ?? message)
  }
  refuseRepeatedValues(parsed.tokens, { ...COMMON_FLAGS, ...options })
  const { tokens: _tokens, ...result } = parsed
  return result
}

/**
 * A command that takes flags only refuses an argument (`fixloop serve 9000`, `fixloop backup nightly.tar`):
 * node's parser hands it over as a positional, which such a command never read, so `serve 9000` served on
 * 8080 and `serve ./my-data` on ./data without a word. `flagFor` names the flag the value most likely
 * belongs to, for the hint.
 */
export function refuseArguments(positionals: string[], command: string, flagFor?: (arg: string) => string | undefined): void {
  if (positionals.length === 0) return
  const arg = positionals[0]
  const flag = flagFor?.(arg)
  throw new UsageError(`unexpected argument "${arg}" for "fixloop ${command}": it takes flags only${flag ? ` (did you mean ${flag} ${arg}?)` : ''}. Run "fixloop ${command} --help".`)
}

/** The flag a lone argument of a command that reads a data dir most likely meant: a port or the data dir. */
export const portOrDataDir = (arg: string): string => (/^\d{1,5}$/.test(arg) ? '--port' : '--data-dir')

/**
 * `--batch-window-hours -1`: node's parser takes a value that starts with a dash for the next flag and
 * answers "argument is ambiguous … use '--batch-window-hours=-XYZ'", which hides that the number itself is
 * out of range. A negative number after a flag that takes a value is that flag's value (no flag is named
 * like a number), so the command's own range check answers ("must be an integer from 1 to 720, got -1").
 */
function joinNegativeValues(argv: string[], options: FlagSpec): string[] {
  const out: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === '--') return [...out, ...argv.slice(i)]
    const spec = a.startsWith('--') && !a.includes('=') ? options[a.slice(2)] : undefined
    if (spec?.type === 'string' && /^-\d/.test(argv[i + 1] ?? '')) {
      out.push(`${a}=${argv[++i]}`)
      continue
    }
    out.push(a)
  }
  return out
}

/**
 * Node's wording for a flag without its value ("Option '--port' argument is ambiguous. Did you forget…",
 * "Option '--data-dir <value>' argument missing") as one plain sentence naming the flag and, when the
 * next argument was taken for a flag, that argument. undefined for any other message.
 */
function missingValueMessage(message: string, args: string[]): string | undefined {
  const missing = /^Option '(--[\w-]+)(?: <value>)?' argument missing/.exec(message)
  if (missing) return `${missing[1]} needs a value`
  const ambiguous = /^Option '(--[\w-]+)' argument is ambiguous/.exec(message)
  if (!ambiguous) return undefined
  // The occurrence node stopped at: the one followed by a dash (an earlier one may have had its value).
  const at = args.findIndex((a, i) => a === ambiguous[1] && args[i + 1]?.startsWith('-'))
  const next = args[at + 1]
  return `${ambiguous[1]} needs a value (the next argument, "${next}", is a flag); a value that starts with a dash goes as ${ambiguous[1]}=VALUE`
}

/**
 * A flag that takes one value, given twice (`backup --out a --out b`), is refused: node's parser keeps the
 * last one silently, so a command ran on a value the operator may not have meant (the ops attack). Flags
 * declared `multiple` collect every value; a repeated switch (`--json --json`) means the same thing twice.
 */
function refuseRepeatedValues(tokens: NonNullable<ReturnType<typeof parseArgs>['tokens']>, options: FlagSpec): void {
  const seen = new Map<string, string>()
  for (const t of tokens) {
    if (t.kind !== 'option' || t.value === undefined) continue
    const spec = options[t.name]
    if (!spec || spec.type !== 'string' || spec.multiple) continue
    const first = seen.get(t.name)
    if (first !== undefined) throw new UsageError(`--${t.name} given more than once ("${first}" and "${t.value}"); it takes one value: give it once`)
    seen.set(t.name, t.value)
  }
}

/**
 * The text of a file a flag names (a token, a password, a secret), `-` meaning standard input where
 * `stdin` allows it. The one reader of the CLI's file inputs: an unreadable file, or one holding NUL (the
 * database cannot store it, core/nul.ts), is a usage error (exit 2) naming the flag.
 */
export async function readInputFile(path: string, flag: string, { stdin = false } = {}): Promise<string> {
  let text: string
  try {
    text = stdin && path === '-' ? await Bun.stdin.text() : readFileSync(path, 'utf8')
  } catch (e) {
    throw new UsageError(`${flag}: cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`)
  }
  if (text.includes(NUL)) throw new UsageError(`${flag}: ${path} ${NUL_MESSAGE}`)
  return text
}

/**
 * A service's refusal of a value (400 invalid_body, its issues at JSON paths) as a usage error naming the
 * flag each path comes from (`fields`: path → flag). The services' issue messages describe the value
 * expected ("a port 1-65535", "a channel id (C0123ABCD) or #name"), which the API's issue path introduces;
 * printed alone on a command line they named nothing. Any other error is returned as it is.
 */
export function namedByFlag(e: unknown, fields: Record<string, string>): unknown {
  if (!(e instanceof ApiError) || e.code !== 'invalid_body') return e
  const issues = (e.details as { issues?: { path?: string; message: string }[] } | undefined)?.issues ?? []
  if (issues.length === 0 || !issues.every((i) => i.path !== undefined && i.path in fields)) return e
  return new UsageError(issues.map((i) => `${fields[i.path!]}: ${i.message}`).join('; '))
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

/** Table cell text: objects as JSON, long values cut so a row stays on one line. */
function cell(v: unknown): string {
  const text = v === null || v === undefined ? '-' : typeof v === 'object' ? JSON.stringify(v) : String(v)
  return text.length > 40 ? clip(text, 39) + '…' : text
}

/**
 * A list as an aligned text table: one header row, one row per item, the columns of the first item.
 * `whole` names columns shown uncut (an admin's Orgs and roles).
 */
export function formatTable(rows: Record<string, unknown>[], whole: string[] = []): string {
  if (rows.length === 0) return '(none)\n'
  const columns = Object.keys(rows[0])
  const cells = rows.map((r) => columns.map((c) => (whole.includes(c) ? String(r[c] ?? '-') : cell(r[c]))))
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => r[i].length)))
  const line = (values: string[]) => values.map((v, i) => v.padEnd(widths[i])).join('  ').trimEnd()
  return [line(columns.map((c) => c.toUpperCase())), ...cells.map(line)].join('\n') + '\n'
}

/**
 * Prints a result: one JSON object with --json; otherwise a list ({data: [...]}, maybe with a cursor) as
 * a table and anything else as "key: value" lines.
 */
export function output(result: Record<string, unknown>, json: boolean | undefined): void {
  if (json) {
    process.stdout.write(JSON.stringify(result) + '\n')
    return
  }
  let rest = Object.entries(result)
  // A page ({data: [...], nextCursor}) is a table, then its other fields that have a value.
  if (Array.isArray(result.data)) {
    process.stdout.write(formatTable(result.data as Record<string, unknown>[]))
    rest = rest.filter(([k, v]) => k !== 'data' && v !== null && v !== undefined)
  }
  for (const [k, v] of rest) process.stdout.write(`${k}: ${typeof v === 'object' ? JSON.stringify(v) : String(v)}\n`)
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
