// Edge runtime (Vercel's edge-runtime VM: web APIs only, no Node built-ins): evaluates the CJS bundle
// and the smoke calls inside the VM.
import { EdgeRuntime } from 'edge-runtime'
import { readFileSync } from 'node:fs'

const here = new URL('.', import.meta.url)
const bundle = readFileSync(new URL('../../../packages/client/dist/index.cjs', here), 'utf8')
const smoke = readFileSync(new URL('./smoke.cjs', here), 'utf8')
const env = process.env
const cfg = { url: env.FIXLOOP_URL, key: env.FIXLOOP_KEY, pub: env.FIXLOOP_PUB, app: env.FIXLOOP_APP, secret: env.FIXLOOP_SECRET, tag: env.FIXLOOP_TAG }
const runtime = new EdgeRuntime()
const wrap = (code) => `(() => { const module = { exports: {} }; const exports = module.exports; ${code}\n; return module.exports })()`
const result = await runtime.evaluate(`
  const lib = ${wrap(bundle)};
  const { smoke } = ${wrap(smoke)};
  globalThis.__hasProcess = typeof process !== 'undefined';
  smoke(lib, ${JSON.stringify(cfg)})
`)
console.log(JSON.stringify({ ...result, nodeGlobals: runtime.evaluate('globalThis.__hasProcess') }))
