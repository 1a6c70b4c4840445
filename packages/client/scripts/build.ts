/**
 * Builds packages/client/dist: index.js (ESM), index.cjs (CommonJS), index.d.ts + index.d.cts (types for
 * each), and enforces the size budget: the core (`new Fixloop(...)` and its resources, helpers shaken
 * out) must stay ≤ 6 KB minified + gzipped, so the client is cheap on edge runtimes.
 *   bun packages/client/scripts/build.ts
 */
import { gzipSync } from 'node:zlib'
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const root = join(import.meta.dir, '..')
const dist = join(root, 'dist')
const CORE_BUDGET_BYTES = 6 * 1024

rmSync(dist, { recursive: true, force: true })
mkdirSync(dist)

// Readable, unminified output: users get real names in their stack traces; their bundler minifies.
for (const [format, file] of [['esm', 'index.js'], ['cjs', 'index.cjs']] as const) {
  const result = await Bun.build({ entrypoints: [join(root, 'src/index.ts')], format, target: 'browser', minify: false, packages: 'bundle' })
  if (!result.success) throw new AggregateError(result.logs, `client ${format} build failed`)
  writeFileSync(join(dist, file), await result.outputs[0].text())
}

// Declarations: tsc per source file, then a .d.cts twin of each so `require` users get CJS-flavoured types.
const tsc = Bun.spawnSync(['bunx', 'tsc', '-p', join(root, 'tsconfig.json')], { stdout: 'inherit', stderr: 'inherit' })
if (tsc.exitCode !== 0) throw new Error('tsc failed on packages/client')
for (const name of readdirSync(join(dist, 'types'))) {
  renameSync(join(dist, 'types', name), join(dist, name))
  const cts = readFileSync(join(dist, name), 'utf8').replace(/from '(\.\/[^']+)\.js'/g, "from '$1.cjs'")
  writeFileSync(join(dist, name.replace(/\.d\.ts$/, '.d.cts')), cts)
}
rmSync(join(dist, 'types'), { recursive: true })

/** min+gzip bytes of a bundle of `code` (resolved from the package root). */
async function minGzip(code: string): Promise<number> {
  const entry = join(root, '.size-entry.ts')
  writeFileSync(entry, code)
  try {
    const result = await Bun.build({ entrypoints: [entry], format: 'esm', target: 'browser', minify: true })
    if (!result.success) throw new AggregateError(result.logs, 'size build failed')
    return gzipSync(await result.outputs[0].text(), { level: 9 }).length
  } finally {
    rmSync(entry)
  }
}

const core = await minGzip("export { Fixloop, FixloopError } from './src/index.ts'")
const all = await minGzip("export * from './src/index.ts'")
console.log(`@fixloop/client size (min+gzip): core ${core} B of ${CORE_BUDGET_BYTES} B budget (${((core / CORE_BUDGET_BYTES) * 100).toFixed(0)} %), everything ${all} B`)
if (core > CORE_BUDGET_BYTES) {
  console.error(`@fixloop/client core is ${core} B min+gzip: over the ${CORE_BUDGET_BYTES} B budget`)
  process.exit(1)
}
