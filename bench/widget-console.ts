/**
 * What the widget's console recording costs per logged value: the bounded summary (widget/src/summarize.ts)
 * against the JSON.stringify the widget used before, for a large array of objects. Prints figures only
 * (no targets are asserted). Run: `bun bench/widget-console.ts`.
 */
import { summarize } from '../widget/src/summarize'

const SIZES = [1_000, 100_000, 1_000_000]
const RUNS = 20

console.log(`uptime: ${(await Bun.$`uptime`.text()).trim()}`)
for (const n of SIZES) {
  const value = Array.from({ length: n }, (_, i) => ({ id: i, name: `item ${i}`, tags: ['a', 'b'] }))
  let started = performance.now()
  const json = JSON.stringify(value)
  const jsonMs = performance.now() - started
  started = performance.now()
  let text = ''
  for (let i = 0; i < RUNS; i++) text = summarize(value, 2000)
  const summaryMs = (performance.now() - started) / RUNS
  console.log(`${n.toLocaleString('en')} objects: JSON.stringify ${jsonMs.toFixed(1)} ms (${json.length.toLocaleString('en')} chars); summary ${summaryMs.toFixed(3)} ms (${text.length} chars)`)
}
