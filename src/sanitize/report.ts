/**
 * Sanitizes one feedback report: every free-text place, each with the rules that fit it.
 * - text, metadata (recursively, keys too), console messages, component name and meta: every rule,
 *   plus the submitter's own email, name and id;
 * - url: the same rules, applied part by part so it stays a valid URL (url.ts);
 * - userAgent: credential rules only (it is all version numbers; PII rules would only misfire).
 * Structural members (console level and ts, bbox, screenshotKey, attachments, viewport) are not text
 * and stay as they are: an upload key must keep pointing at its upload.
 */
import { CREDENTIAL_RULES } from './rules'
import { sanitizeJson, sanitizeText, WITHHELD, type RedactionCounts } from './sanitize'
import { rulesFor, type Submitter } from './submitter'
import { token } from './tokens'
import { sanitizeUrl } from './url'

export interface ConsoleEntry {
  level: string
  message: string
  ts: number
  [member: string]: unknown
}

export interface ComponentTarget {
  name: string
  meta?: Record<string, unknown>
  [member: string]: unknown
}

/** The free-text members of a report, as parsed from its row. */
export interface ReportText {
  text: string
  url: string | null
  userAgent: string | null
  consoleLogs: ConsoleEntry[] | null
  metadata: Record<string, unknown> | null
  componentTarget: ComponentTarget | null
}

/** Component members that are structure, not text. */
const COMPONENT_STRUCTURE = new Set(['bbox', 'screenshotKey'])

/** Returns the sanitized report and how many values each rule replaced. */
export function sanitizeReport(report: ReportText, submitter?: Submitter): { report: ReportText; redactions: RedactionCounts } {
  try {
    return sanitizeFields(report, submitter)
  } catch {
    // A sanitizer bug must not leave the raw report in place (the job would retry and finally fail,
    // keeping it): every free-text value is withheld instead, and the count says so.
    return { report: withheld(report), redactions: { [WITHHELD]: 1 } }
  }
}

/** The rule name counted when a report (or one of its texts) could not be sanitized and was withheld. */
export { WITHHELD }

function withheld(report: ReportText): ReportText {
  const t = token(WITHHELD)
  const target = report.componentTarget
  return {
    text: t,
    url: null,
    userAgent: null,
    consoleLogs: report.consoleLogs?.map((e) => ({ level: e.level, message: t, ts: e.ts })) ?? null,
    metadata: report.metadata === null ? null : {},
    componentTarget: target === null ? null : { name: t, ...(target.bbox ? { bbox: target.bbox } : {}), ...(target.screenshotKey ? { screenshotKey: target.screenshotKey } : {}) },
  }
}

function sanitizeFields(report: ReportText, submitter?: Submitter): { report: ReportText; redactions: RedactionCounts } {
  const counts: RedactionCounts = {}
  const rules = rulesFor(submitter)
  const text = (s: string) => sanitizeText(s, counts, rules)
  const json = <T>(v: T) => sanitizeJson(v, counts, rules) as T

  let componentTarget: ComponentTarget | null = null
  if (report.componentTarget) {
    componentTarget = {} as ComponentTarget
    for (const [key, value] of Object.entries(report.componentTarget)) {
      componentTarget[key] = COMPONENT_STRUCTURE.has(key) ? value : json(value)
    }
  }
  return {
    report: {
      text: text(report.text),
      url: report.url === null ? null : sanitizeUrl(report.url, counts, rules),
      userAgent: report.userAgent === null ? null : sanitizeText(report.userAgent, counts, CREDENTIAL_RULES),
      consoleLogs: report.consoleLogs === null ? null : report.consoleLogs.map((e) => ({ ...e, message: text(e.message) })),
      metadata: report.metadata === null ? null : json(report.metadata),
      componentTarget,
    },
    redactions: counts,
  }
}

/** A report's free-text columns as stored: JSON members as JSON text. */
export interface StoredReport {
  text: string
  url: string | null
  userAgent: string | null
  consoleLogs: string | null
  metadata: string | null
  componentTarget: string | null
}

/** JSON.parse, with an error that does not quote the (raw) text: it ends up in the job's last_error. */
function parseOrNull<T>(json: string | null): T | null {
  if (json === null) return null
  try {
    return JSON.parse(json) as T
  } catch {
    throw new Error('a stored JSON column of the report does not parse')
  }
}
const jsonOrNull = (value: unknown): string | null => (value === null ? null : JSON.stringify(value))

/**
 * `sanitizeReport` over stored columns: what the worker writes back. Throws when a JSON column does not
 * parse (only a damaged row has one): the job retries and, in the end, marks the report failed.
 */
export function sanitizeStored(columns: StoredReport, submitter?: Submitter): { columns: StoredReport; redactions: RedactionCounts } {
  const parsed: ReportText = {
    text: columns.text,
    url: columns.url,
    userAgent: columns.userAgent,
    consoleLogs: parseOrNull(columns.consoleLogs),
    metadata: parseOrNull(columns.metadata),
    componentTarget: parseOrNull(columns.componentTarget),
  }
  const { report, redactions } = sanitizeReport(parsed, submitter)
  return { columns: serialize(report), redactions }
}

/**
 * The columns of a report the worker has not sanitized yet, as a read may show them: sanitized on the fly
 * with the same rules, or withheld when that is impossible. Reads call it only within a budget of
 * characters (src/modules/feedback/present.ts): it costs the HTTP thread what the worker would pay.
 */
export function previewStored(columns: StoredReport, submitter?: Submitter): StoredReport {
  try {
    return sanitizeStored(columns, submitter).columns
  } catch {
    return { text: token(WITHHELD), url: null, userAgent: null, consoleLogs: null, metadata: null, componentTarget: null }
  }
}

/** Characters of free text a preview would read: what it costs, and what a read's budget is charged. */
export function freeTextLength(c: StoredReport): number {
  return c.text.length + (c.url?.length ?? 0) + (c.userAgent?.length ?? 0) + (c.consoleLogs?.length ?? 0) + (c.metadata?.length ?? 0) + (c.componentTarget?.length ?? 0)
}

function serialize(report: ReportText): StoredReport {
  return {
    text: report.text,
    url: report.url,
    userAgent: report.userAgent,
    consoleLogs: jsonOrNull(report.consoleLogs),
    metadata: jsonOrNull(report.metadata),
    componentTarget: jsonOrNull(report.componentTarget),
  }
}
