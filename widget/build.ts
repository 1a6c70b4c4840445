/**
 * Builds the browser widget (ES2019, minified) into widget/dist/: the lazily loaded UI as
 * ui-<hash>.js, one JSON string table per locale (locale-<tag>-<hash>.json, fetched with the UI: all
 * 24 in the loader or the UI would not fit the budgets, and a page needs one), the session replay
 * recorder (loaded only when the App has replay on) as replay-<hash>.js, then the loader widget.js
 * that knows those names and every locale's launcher label. Prints raw and gzip sizes and fails (exit 1)
 * when a budget is exceeded: loader ≤ 8 KB gzip, loader + UI + the largest locale table ≤ 40 KB gzip,
 * the replay chunk ≤ 40 KB gzip on its own.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { transform } from 'esbuild'
import { LOCALES } from './src/locale'
import { TABLES } from './src/locales/index'

/** FIXLOOP_WIDGET_BUDGET_SCALE shrinks the budgets (the test proving an over-budget build fails uses it). */
const SCALE = Number(process.env.FIXLOOP_WIDGET_BUDGET_SCALE ?? '1')
export const LOADER_BUDGET = 8 * 1024 * SCALE
export const TOTAL_BUDGET = 40 * 1024 * SCALE
/** FIXLOOP_WIDGET_REPLAY_BUDGET_SCALE shrinks the replay chunk's budget alone (its test). */
export const REPLAY_BUDGET = 40 * 1024 * Number(process.env.FIXLOOP_WIDGET_REPLAY_BUDGET_SCALE ?? SCALE)
const ROOT = import.meta.dir
const OUT = join(ROOT, 'dist')

async function bundle(entry: string, define: Record<string, string> = {}): Promise<string> {
  const result = await Bun.build({ entrypoints: [join(ROOT, 'src', entry)], target: 'browser', format: 'iife', minify: true, define })
  if (!result.success) throw new AggregateError(result.logs, `widget build failed: ${entry}`)
  // Bun bundles; esbuild lowers the syntax to ES2019 (Bun has no ES-version target) and minifies again.
  const lowered = await transform(await result.outputs[0].text(), { target: 'es2019', minify: true, legalComments: 'none' })
  const code = lowered.code
  // A guard on the lowering: syntax newer than ES2019 fails the build.
  const modern = code.match(/\?\?=|\|\|=|&&=|\?\.\[|(?<![\w$])\?\.(?=[\w$(])|(?<![\w$.])\d+n\b|#[a-zA-Z_$][\w$]*\s+in\b|static\s*\{/)
  if (modern) throw new Error(`widget build: ${entry} contains syntax newer than ES2019 near "${modern[0]}"`)
  return code
}

const gz = (code: string) => gzipSync(code, { level: 9 }).length
const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`

/** Builds both files, prints their sizes, and writes them only when they fit the budgets. */
export async function buildWidget(): Promise<{ loader: number; total: number; replay: number; uiFile: string; replayFile: string; localeFiles: Record<string, string>; over: string[] }> {
  // The proof-of-work Worker's script is a string inside the UI file (started from a blob: URL).
  const worker = await bundle('pow/worker.ts')
  const ui = await bundle('app/main.ts', { __POW_WORKER__: JSON.stringify(worker) })
  const hash = new Bun.CryptoHasher('sha256').update(ui).digest('hex').slice(0, 16)
  const uiFile = `ui-${hash}.js`
  // English is bundled (the base every table falls back to); the others are served as data.
  const tables = LOCALES.filter((l) => l !== 'en').map((l) => [l, JSON.stringify(TABLES[l])] as const)
  const localesHash = new Bun.CryptoHasher('sha256').update(JSON.stringify(tables)).digest('hex').slice(0, 16)
  const localeFiles: Record<string, string> = Object.fromEntries(tables.map(([l, json]) => [`locale-${l}-${localesHash}.json`, json]))
  const launchers = Object.fromEntries(LOCALES.map((l) => [l, TABLES[l].launcher]))
  const replay = await bundle('replay/main.ts')
  const replayFile = `replay-${new Bun.CryptoHasher('sha256').update(replay).digest('hex').slice(0, 16)}.js`
  const loader = await bundle('loader.ts', { __APP_FILE__: JSON.stringify(uiFile), __REPLAY_FILE__: JSON.stringify(replayFile), __LAUNCHERS__: JSON.stringify(launchers), __LOCALES_HASH__: JSON.stringify(localesHash) })
  const tableSizes = tables.map(([l, json]) => [l, gz(json)] as const).sort((a, b) => b[1] - a[1])
  const [largest, largestSize] = tableSizes[0]
  const sizes = { loader: gz(loader), total: gz(loader) + gz(ui) + largestSize, replay: gz(replay), uiFile, replayFile, localeFiles }
  console.log(`widget.js        ${kb(loader.length)} raw, ${kb(sizes.loader)} gzip (budget ${kb(LOADER_BUDGET)})`)
  console.log(`${uiFile}  ${kb(ui.length)} raw, ${kb(gz(ui))} gzip`)
  console.log(`locale-*-${localesHash}.json  ${tables.length} tables, ${kb(tableSizes[tableSizes.length - 1][1])}–${kb(largestSize)} gzip each (largest: ${largest})`)
  console.log(`widget total     ${kb(sizes.total)} gzip with the largest table (budget ${kb(TOTAL_BUDGET)})`)
  console.log(`${replayFile}  ${kb(replay.length)} raw, ${kb(sizes.replay)} gzip (budget ${kb(REPLAY_BUDGET)}, loaded only with replay on)`)
  const over: string[] = []
  if (sizes.loader > LOADER_BUDGET) over.push(`loader ${kb(sizes.loader)} > ${kb(LOADER_BUDGET)}`)
  if (sizes.total > TOTAL_BUDGET) over.push(`total ${kb(sizes.total)} > ${kb(TOTAL_BUDGET)}`)
  if (sizes.replay > REPLAY_BUDGET) over.push(`replay ${kb(sizes.replay)} > ${kb(REPLAY_BUDGET)}`)
  if (over.length) return { ...sizes, over }
  rmSync(OUT, { recursive: true, force: true })
  mkdirSync(OUT, { recursive: true })
  writeFileSync(join(OUT, 'widget.js'), loader)
  writeFileSync(join(OUT, 'ui.js'), ui)
  // locales.json: file name -> JSON text, embedded in the binary by src/http/widget-assets.ts.
  writeFileSync(join(OUT, 'locales.json'), JSON.stringify(localeFiles) + '\n')
  writeFileSync(join(OUT, 'replay.js'), replay)
  writeFileSync(join(OUT, 'manifest.json'), JSON.stringify({ uiFile, replayFile, localeFiles: Object.keys(localeFiles) }) + '\n')
  return { ...sizes, over }
}

if (import.meta.main) {
  const { over } = await buildWidget()
  if (over.length) {
    console.error(`widget over budget (nothing written): ${over.join('; ')}`)
    process.exit(1)
  }
}
