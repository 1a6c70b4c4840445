/**
 * Builds the browser widget (ES2019, minified) into widget/dist/: the lazily loaded UI as
 * ui-<hash>.js, then the loader widget.js that knows that file name. Prints raw and gzip sizes and
 * fails (exit 1) when a budget is exceeded: loader ≤ 8 KB gzip, loader + UI ≤ 40 KB gzip.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { transform } from 'esbuild'

/** FIXLOOP_WIDGET_BUDGET_SCALE shrinks the budgets (the test proving an over-budget build fails uses it). */
const SCALE = Number(process.env.FIXLOOP_WIDGET_BUDGET_SCALE ?? '1')
export const LOADER_BUDGET = 8 * 1024 * SCALE
export const TOTAL_BUDGET = 40 * 1024 * SCALE
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
export async function buildWidget(): Promise<{ loader: number; total: number; uiFile: string; over: string[] }> {
  // The proof-of-work Worker's script is a string inside the UI file (started from a blob: URL).
  const worker = await bundle('pow/worker.ts')
  const ui = await bundle('app/main.ts', { __POW_WORKER__: JSON.stringify(worker) })
  const hash = new Bun.CryptoHasher('sha256').update(ui).digest('hex').slice(0, 16)
  const uiFile = `ui-${hash}.js`
  const loader = await bundle('loader.ts', { __APP_FILE__: JSON.stringify(uiFile) })
  const sizes = { loader: gz(loader), total: gz(loader) + gz(ui), uiFile }
  console.log(`widget.js        ${kb(loader.length)} raw, ${kb(sizes.loader)} gzip (budget ${kb(LOADER_BUDGET)})`)
  console.log(`${uiFile}  ${kb(ui.length)} raw, ${kb(gz(ui))} gzip`)
  console.log(`widget total     ${kb(sizes.total)} gzip (budget ${kb(TOTAL_BUDGET)})`)
  const over: string[] = []
  if (sizes.loader > LOADER_BUDGET) over.push(`loader ${kb(sizes.loader)} > ${kb(LOADER_BUDGET)}`)
  if (sizes.total > TOTAL_BUDGET) over.push(`total ${kb(sizes.total)} > ${kb(TOTAL_BUDGET)}`)
  if (over.length) return { ...sizes, over }
  rmSync(OUT, { recursive: true, force: true })
  mkdirSync(OUT, { recursive: true })
  writeFileSync(join(OUT, 'widget.js'), loader)
  writeFileSync(join(OUT, 'ui.js'), ui)
  writeFileSync(join(OUT, 'manifest.json'), JSON.stringify({ uiFile }) + '\n')
  return { ...sizes, over }
}

if (import.meta.main) {
  const { over } = await buildWidget()
  if (over.length) {
    console.error(`widget over budget (nothing written): ${over.join('; ')}`)
    process.exit(1)
  }
}
