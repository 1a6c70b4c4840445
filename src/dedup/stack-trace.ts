/**
 * A stack trace pasted into a report, reduced to where it failed: the exception and the first frame of
 * the application's own code. Two reports that crash with the same exception at the same place of the
 * same code describe one bug far more often than two reports that only read alike (duplicate detection
 * on stack traces: Lerch & Mezini, "Finding duplicates of your yet unwritten bug report", CSMR 2013).
 * Frames below the first are not compared: they differ between duplicates when each reporter came there
 * another way.
 *
 * Crash signatures (`[@ mozilla::Foo::Bar]`), Java and other JVM languages (`at pkg.Class.method(File.java:12)`),
 * Python tracebacks (`File "x.py", line 3, in name`, the failing call last) and JavaScript (`at name
 * (file.js:1:2)`) are read; line numbers, offsets, lambda and generated-class suffixes are dropped (they
 * move with every build).
 */

/** Frames of the platform, not of the application: where the platform noticed, not where the bug is. */
const PLATFORM = /^(java|javax|jdk|sun|com\.sun|kotlin|kotlinx|scala|android|androidx|dalvik|org\.junit|junit|node:|internal\/|<anonymous>|native)/
/** How far into a text a trace is looked for: the title and the first screens of the body carry it. */
const SCAN_LIMIT = 20_000

const JVM_EXCEPTIONS = /\b((?:[a-z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error|Throwable))\b/g
const JVM_FRAME = /^\s*at ([\w$.]+)\.([\w$<>]+)\([^)\n]*\)/gm
const PY_FRAME = /^\s*File "([^"\n]+)", line \d+, in ([\w<>.]+)/gm
const PY_EXCEPTION = /^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)):?/gm
const JS_FRAME = /^\s*at (?:(?:async )?([\w$.<>\[\] ]+?) \()?((?:[a-z]+:\/\/)?[^\s()]+?):\d+:\d+\)?\s*$/gm
const JS_EXCEPTIONS = /\b([A-Z][A-Za-z]*Error)\b(?::|\s)/g

/** `Foo$1`, `lambda$run$0`, `$$Lambda$12/0x0000000800c0b040`: the parts a recompile renames. */
const stripGenerated = (name: string) => name.replace(/\$\$Lambda.*$/, '').replace(/\$\d+/g, '').replace(/^lambda\$/, '').replace(/\$+$/, '')
/**
 * A file's name without its directories, query or build hash: `webpack:///src/app.js?v=3` → `app.js`,
 * `main.3f2a9c.js` → `main.js` (a bundle is renamed by every deploy).
 */
const baseName = (file: string) => (file.replace(/[?#].*$/, '').split(/[\\/]/).pop() ?? file).replace(/[.-](?=[0-9a-f]*\d)[0-9a-f]{4,}(?=\.)/gi, '')

/**
 * `exception@frame` of the trace in `text` (or `crash@signature` for a crash signature), or null when it
 * holds none with an application frame.
 */
export function stackFingerprint(text: string): string | null {
  const t = text.length > SCAN_LIMIT ? text.slice(0, SCAN_LIMIT) : text
  return crashSignature(t) ?? jvm(t) ?? python(t) ?? javascript(t)
}

/**
 * A crash reporter's signature, as Mozilla's (Socorro) writes it into titles and comments: `Crash in
 * [@ mozilla::dom::Foo::Bar]`, `application crashed [@ nsSocketTransport::InitiateSocket()]`. It names
 * the frame the crash is grouped by; offsets and argument lists are dropped. A signature that is only a
 * system library and an offset (`[@ libart.so + 0x2ed30c]`) names no code of the application: not used.
 */
const CRASH_SIGNATURE = /\[@ ?([^\]\n]{3,300})\]/
function crashSignature(t: string): string | null {
  const m = t.match(CRASH_SIGNATURE)
  if (!m) return null
  const signature = m[1]
    .replace(/\s*\+\s*0x[0-9a-f]+/gi, '')
    .replace(/\([^()]*\)/g, '')
    .replace(/\s+/g, ' ')
    .trim()
  if (!signature || /^(\S+\.(so|dll|dylib|exe)|@?0x[0-9a-f]+|\?+)$/i.test(signature)) return null
  return `crash@${signature}`
}

function jvm(t: string): string | null {
  for (const m of t.matchAll(JVM_FRAME)) {
    const owner = stripGenerated(m[1])
    if (PLATFORM.test(owner)) continue
    // The exception named before this frame: the nearest one above it (a "Caused by:" names its own).
    const before = t.slice(Math.max(0, m.index - 2000), m.index)
    const exceptions = [...before.matchAll(JVM_EXCEPTIONS)]
    const exception = exceptions.at(-1)?.[1]
    if (!exception) return null
    return `${exception}@${owner}.${stripGenerated(m[2])}`
  }
  return null
}

function python(t: string): string | null {
  let last: string | null = null
  let lastEnd = -1
  for (const m of t.matchAll(PY_FRAME)) {
    const file = baseName(m[1])
    // The innermost frame of the application (the traceback lists the failing call last).
    if (m[1].includes('site-packages') || m[1].includes('/lib/python') || m[1].startsWith('<')) continue
    last = `${file}:${m[2]}`
    lastEnd = m.index + m[0].length
  }
  if (!last) return null
  const exception = [...t.slice(lastEnd, lastEnd + 4000).matchAll(PY_EXCEPTION)][0]?.[1]
  return exception ? `${exception}@${last}` : null
}

function javascript(t: string): string | null {
  for (const m of t.matchAll(JS_FRAME)) {
    const file = m[2]
    if (PLATFORM.test(file) || file.includes('node_modules')) continue
    const fn = m[1] ? stripGenerated(m[1].replace(/^(new|Object\.|Module\.)\s*/, '')) : '(anonymous)'
    const exception = t.slice(Math.max(0, m.index - 2000), m.index).match(JS_EXCEPTIONS)?.at(-1)?.replace(/[:\s]$/, '')
    if (!exception) return null
    return `${exception}@${fn}@${baseName(file)}`
  }
  return null
}
