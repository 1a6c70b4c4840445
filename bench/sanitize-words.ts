/**
 * Words the sanitizer keeps (`bun bench/sanitize-words.ts`): every text of the three dedup corpora
 * (report text and console error), every sanitizer fixture (true positives, look-alikes, secrets
 * followed by prose) is sanitized, and each whitespace-separated word of the input counts as kept when
 * the output still holds it. A rule that reads too far (a pass phrase running over the sentence after a
 * password) shows up here as words lost; a rule that reads too little, in the fixture tests.
 */
import { sanitizeText } from '../src/sanitize/sanitize'
import { LOOK_ALIKES, SECRET_THEN_PROSE, TRUE_POSITIVES } from '../test/sanitize-fixtures'

type Corpus = { apps: { reports: { text: string; consoleError?: string }[] }[] }

/** The texts of one dedup corpus: each report's text and console error. */
async function corpusTexts(name: string): Promise<string[]> {
  const c = (await Bun.file(new URL(`../test/fixtures/${name}-corpus.json`, import.meta.url)).json()) as Corpus
  return c.apps.flatMap((a) => a.reports.flatMap((r) => [r.text, ...(r.consoleError ? [r.consoleError] : [])]))
}

/** [words in, words kept]: a word is kept while the output holds as many copies of it as the input used so far. */
function wordsKept(input: string, output: string): [number, number] {
  const left = new Map<string, number>()
  for (const w of output.split(/\s+/).filter(Boolean)) left.set(w, (left.get(w) ?? 0) + 1)
  const words = input.split(/\s+/).filter(Boolean)
  let kept = 0
  for (const w of words) {
    const n = left.get(w) ?? 0
    if (n > 0) {
      kept++
      left.set(w, n - 1)
    }
  }
  return [words.length, kept]
}

const sets: [string, string[]][] = [
  ['dedup-corpus', await corpusTexts('dedup')],
  ['real-corpus', await corpusTexts('real')],
  ['tracker-corpus', await corpusTexts('tracker')],
  ['true positives', TRUE_POSITIVES.map(([, input]) => input)],
  ['look-alikes', LOOK_ALIKES],
  ['secret then prose', SECRET_THEN_PROSE.map(([input]) => input)],
]
let allIn = 0
let allKept = 0
for (const [name, texts] of sets) {
  let words = 0
  let kept = 0
  for (const t of texts) {
    const [w, k] = wordsKept(t, sanitizeText(t, {}))
    words += w
    kept += k
  }
  allIn += words
  allKept += kept
  console.log(`${name.padEnd(18)} ${String(texts.length).padStart(5)} texts ${String(words).padStart(7)} words ${String(kept).padStart(7)} kept (${((100 * kept) / words).toFixed(2)} %)`)
}
console.log(`${'all'.padEnd(18)} ${''.padStart(11)} ${String(allIn).padStart(7)} words ${String(allKept).padStart(7)} kept (${((100 * allKept) / allIn).toFixed(2)} %)`)
