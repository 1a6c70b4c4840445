/**
 * A pasted stack trace as its own field (src/dedup/stack-trace.ts): where it failed, read from Java,
 * Python and JavaScript traces as reporters paste them, through the sanitizer as stored; and what it
 * does to a verdict (a corroboration at the corroborated bar, never a merge on its own).
 */
import { describe, expect, test } from 'bun:test'
import { stackFingerprint } from '../src/dedup/stack-trace'
import { corroboration, decideOnScore, DEFAULT_THRESHOLDS } from '../src/dedup/decide'
import { featuresOf } from '../src/dedup/features'
import { sanitizeText } from '../src/sanitize/sanitize'

const JAVA = `NPE when saving a checkpoint
\`\`\`
java.lang.NullPointerException: null
\tat java.util.HashMap.getNode(HashMap.java:571)
\tat org.apache.hadoop.hdfs.server.namenode.FSNamesystem.lambda$saveNamespace$3(FSNamesystem.java:868)
\tat org.apache.hadoop.hdfs.server.namenode.FSImage.save(FSImage.java:120)
\`\`\``

describe('where a trace failed', () => {
  const CASES: [string, string, string | null][] = [
    ['Java: the first frame of the application, its exception; platform frames, line numbers and lambda names dropped', JAVA, 'java.lang.NullPointerException@org.apache.hadoop.hdfs.server.namenode.FSNamesystem.saveNamespace'],
    [
      'Java: a "Caused by" names the exception of the frames below it',
      'Job failed\norg.example.JobException: step 3\n\tat java.lang.Thread.run(Thread.java:750)\nCaused by: java.io.IOException: Stream closed\n\tat org.example.io.Reader.read(Reader.java:31)',
      'java.io.IOException@org.example.io.Reader.read',
    ],
    [
      'Python: the innermost frame of the application (listed last), libraries skipped, the exception after it',
      'Traceback (most recent call last):\n  File "/app/billing/invoice.py", line 42, in total\n  File "/app/billing/math.py", line 7, in divide\n  File "/usr/lib/python3/site-packages/decimal.py", line 9, in div\nZeroDivisionError: division by zero',
      'ZeroDivisionError@math.py:divide',
    ],
    [
      'JavaScript in a browser: function and file, the bundle hash dropped',
      "TypeError: Cannot read properties of undefined (reading 'id')\n    at renderRow (https://app.example.com/static/js/main.3f2a9c.js:1:2345)\n    at https://app.example.com/static/js/vendor.js:2:10",
      'TypeError@renderRow@main.js',
    ],
    ['Node: node: internals and node_modules skipped', 'TypeError: x is not a function\n    at Module._compile (node:internal/modules/cjs/loader:1105:14)\n    at handler (/srv/app/node_modules/express/router.js:10:5)\n    at saveOrder (/srv/app/orders.js:88:3)', 'TypeError@saveOrder@orders.js'],
    ['a crash signature in a title (Mozilla\'s crash reporter): the frame it is grouped by, argument list dropped', 'Intermittent test_places.js | application crashed [@ mozilla::places::Database::Init()] after Assertion failure', 'crash@mozilla::places::Database::Init'],
    ['a signature of a system library and an offset names no application code', 'application crashed [@ libart.so + 0x2ed30c] | timed out after 370 seconds', null],
    ['a null-address signature neither', 'Crash in [@ @0x0]', null],
    ['no trace', 'The export button does nothing at all (tried twice).', null],
    ['frames of the platform only: nothing of the application to match on', 'java.lang.OutOfMemoryError: Java heap space\n\tat java.util.Arrays.copyOf(Arrays.java:3332)\n\tat java.lang.StringBuilder.append(StringBuilder.java:136)', null],
    ['a frame with no exception named before it', 'It hangs here:\n\tat org.example.ui.Editor.save(Editor.java:10)', null],
  ]
  for (const [name, text, want] of CASES) test(name, () => expect(stackFingerprint(text)).toBe(want))

  test('the same after the sanitizer (what is stored and compared)', () => {
    for (const [, text, want] of CASES) expect(stackFingerprint(sanitizeText(text, {}))).toBe(want)
  })

  test('another build of the same code: line numbers, lambda numbers and bundle hashes move, the fingerprint does not', () => {
    const rebuilt = JAVA.replace('868', '912').replace('$3', '$5').replace('571', '577')
    expect(stackFingerprint(rebuilt)).toBe(stackFingerprint(JAVA))
    expect(stackFingerprint('TypeError: boom\n    at renderRow (https://a.example/js/main.77b1e0.js:1:99)')).toBe(stackFingerprint('TypeError: boom\n    at renderRow (https://a.example/js/main.3f2a9c.js:1:2345)'))
    expect(stackFingerprint('Crash in [@ nsFoo::Bar(int) + 0x1f]')).toBe(stackFingerprint('crash [@ nsFoo::Bar + 0x2a]'))
  })

  test('hostile text: long dotted runs, thousands of frames, unterminated traces stay linear', () => {
    const hostile = [
      'at ' + 'a.'.repeat(10_000),
      ('\tat ' + 'a.'.repeat(300) + '\n').repeat(60),
      '  File "' + 'x'.repeat(19_000),
      ('    at ' + 'a '.repeat(5000) + '\n').repeat(3),
      'java.lang.Error\n' + '\tat java.x.Y.z(Y.java:1)\n'.repeat(5000),
      'Caused by: ' + 'java.lang.Error: '.repeat(3000) + '\n\tat org.x.Y.z(Y.java:1)',
      '[@ ' + '('.repeat(150) + 'x'.repeat(150) + ')'.repeat(100),
      '[@ ' + ' + 0x1'.repeat(3000) + ']',
    ]
    const started = performance.now()
    for (const text of hostile) stackFingerprint(text)
    // Catastrophic backtracking would take seconds; these take a few milliseconds together.
    expect(performance.now() - started).toBeLessThan(500)
  })
})

describe('a shared trace corroborates a merge, never makes one alone', () => {
  const report = (id: string, title: string, trace: string) =>
    featuresOf({ id, text: sanitizeText(`${title}\nHappens on every save since the upgrade.\n${trace}`, {}), url: null, componentTarget: null, consoleLogs: null, duplicateOfId: null })
  const trace = JAVA.slice(JAVA.indexOf('java.lang'))
  const a = report('a', 'Checkpoint fails with a NullPointerException', trace)
  const b = report('b', 'Saving the namespace crashes the NameNode', trace.replace('868', '870'))
  const elsewhere = report('c', 'Saving the namespace crashes the NameNode', trace.replace('FSNamesystem.lambda$saveNamespace$3', 'FSNamesystem.rollEditLog'))

  test('the same exception at the same place: a score between the corroborated bar and the merge bar merges, and the reason says why', () => {
    expect(corroboration(a, b)).toEqual(['stack trace'])
    const score = (DEFAULT_THRESHOLDS.moderate + DEFAULT_THRESHOLDS.strong) / 2
    expect(decideOnScore(a, b, score, DEFAULT_THRESHOLDS)).toMatchObject({ attach: true, reason: expect.stringContaining('with same stack trace') })
  })

  test('below the corroborated bar it is not merged; failing elsewhere does not corroborate', () => {
    expect(decideOnScore(a, b, DEFAULT_THRESHOLDS.moderate - 0.05, DEFAULT_THRESHOLDS).attach).toBe(false)
    expect(corroboration(a, elsewhere)).toEqual([])
    expect(decideOnScore(a, elsewhere, (DEFAULT_THRESHOLDS.moderate + DEFAULT_THRESHOLDS.strong) / 2, DEFAULT_THRESHOLDS).attach).toBe(false)
  })
})
