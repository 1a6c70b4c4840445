/**
 * Agent providers: the exact command line each preset runs (documented in docs/agents.md) and how
 * its usage (model, tokens, cost) is read back. A result file written by the agent
 * (FIXLOOP_RESULT_FILE) always wins over what is parsed from its output.
 */
import type { AgentProvider } from '../modules/connections/service'

export interface AgentUsage {
  model?: string
  tokensIn?: number
  tokensOut?: number
  costUsd?: number
  summary?: string
}

/** Quotes a value for POSIX sh. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`
}

/** Environment variables each preset's CLI needs from the operator's environment (names only). */
export const PRESET_ENV: Record<AgentProvider, string[]> = {
  'claude-code': ['ANTHROPIC_API_KEY', 'CLAUDE_CODE_USE_BEDROCK', 'CLAUDE_CODE_USE_VERTEX', 'AWS_REGION', 'AWS_PROFILE', 'ANTHROPIC_MODEL'],
  codex: ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'CODEX_HOME'],
  aider: ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'OPENROUTER_API_KEY', 'AIDER_MODEL'],
  command: [],
}

/**
 * Passed-through variables that are settings, not secrets (a region, a profile or model name, an API base
 * URL, a folder): their values may appear in an ordinary fix (`region: "us-east-1"`), so the guardrails do
 * not refuse a change that holds one. Every other passed-through value (the API keys, FIXLOOP_AGENT_ENV's
 * names) is a secret no pushed change may carry. The output scrubber still masks them all.
 */
export const NOT_SECRET_ENV: ReadonlySet<string> = new Set(['CLAUDE_CODE_USE_BEDROCK', 'CLAUDE_CODE_USE_VERTEX', 'AWS_REGION', 'AWS_PROFILE', 'ANTHROPIC_MODEL', 'OPENAI_BASE_URL', 'CODEX_HOME', 'AIDER_MODEL'])

/**
 * The shell command a run executes, in the cloned repository, with FIXLOOP_TASK_FILE and
 * FIXLOOP_RESULT_FILE set. For `command`, the operator's template may use {task_file}, {result_file}
 * and {model}, which are replaced by shell-quoted values.
 */
export function agentCommandLine(provider: AgentProvider, model: string | null, template: string | null): string {
  const m = model ? ` --model ${shellQuote(model)}` : ''
  switch (provider) {
    case 'claude-code':
      return `claude -p --output-format json --permission-mode acceptEdits${m} < "$FIXLOOP_TASK_FILE"`
    case 'codex':
      return `codex exec --full-auto --json --skip-git-repo-check${m} - < "$FIXLOOP_TASK_FILE"`
    case 'aider':
      return `aider --yes-always --no-auto-commits --no-dirty-commits --no-gitignore --no-check-update --no-stream${m} --message-file "$FIXLOOP_TASK_FILE"`
    case 'command':
      return (template ?? 'false')
        .replaceAll('{task_file}', '"$FIXLOOP_TASK_FILE"')
        .replaceAll('{result_file}', '"$FIXLOOP_RESULT_FILE"')
        .replaceAll('{model}', shellQuote(model ?? ''))
  }
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined)

/** Claude Code `--output-format json`: one result object with total_cost_usd and usage. */
function parseClaude(stdout: string): AgentUsage {
  const start = stdout.indexOf('{')
  if (start === -1) return {}
  try {
    const r = JSON.parse(stdout.slice(start)) as Record<string, unknown>
    const usage = (r.usage ?? {}) as Record<string, unknown>
    const models = Object.keys((r.modelUsage ?? {}) as Record<string, unknown>)
    return {
      model: models[0],
      tokensIn: (num(usage.input_tokens) ?? 0) + (num(usage.cache_read_input_tokens) ?? 0) + (num(usage.cache_creation_input_tokens) ?? 0),
      tokensOut: num(usage.output_tokens),
      costUsd: num(r.total_cost_usd),
      summary: typeof r.result === 'string' ? r.result : undefined,
    }
  } catch {
    return {}
  }
}

/** Codex `exec --json`: JSON lines; usage arrives in token-count / turn-completed events. */
function parseCodex(stdout: string): AgentUsage {
  const out: AgentUsage = {}
  for (const line of stdout.split('\n')) {
    if (!line.startsWith('{')) continue
    try {
      const e = JSON.parse(line) as Record<string, unknown>
      const usage = (e.usage ?? (e.info as Record<string, unknown> | undefined)?.total_token_usage) as Record<string, unknown> | undefined
      if (usage) {
        out.tokensIn = num(usage.input_tokens) ?? out.tokensIn
        out.tokensOut = num(usage.output_tokens) ?? out.tokensOut
      }
      if (typeof e.model === 'string') out.model = e.model
    } catch {
      // not an event line
    }
  }
  return out
}

const KILO = (n: string, unit: string | undefined) => Math.round(Number(n.replace(/,/g, '')) * (unit?.toLowerCase() === 'k' ? 1000 : unit?.toLowerCase() === 'm' ? 1e6 : 1))

/**
 * aider prints "Tokens: 2.1k sent, 310 received. Cost: $0.01 message, $0.02 session." after each exchange.
 * Its stdout also carries what the model wrote and the output of the shell commands it runs
 * (`--yes-always`), both steered by the report: a command echoing "… Cost: $0.00 message, $0.00 session."
 * after the real line made the run cost nothing and slip past the monthly cap. The session cost only
 * grows, so the highest one printed is taken: a forged line can raise it (as a result file can), never
 * lower it.
 */
function parseAider(stdout: string): AgentUsage {
  const out: AgentUsage = {}
  for (const m of stdout.matchAll(/Tokens:\s*([\d.,]+)([kKmM])?\s*sent,\s*([\d.,]+)([kKmM])?\s*received\.(?:\s*Cost:\s*\$([\d.]+)\s*message,\s*\$([\d.]+)\s*session)?/g)) {
    out.tokensIn = (out.tokensIn ?? 0) + KILO(m[1], m[2])
    out.tokensOut = (out.tokensOut ?? 0) + KILO(m[3], m[4])
    if (m[6]) out.costUsd = Math.max(out.costUsd ?? 0, Number(m[6]))
  }
  const model = /^Model:\s*(\S+)/m.exec(stdout)
  if (model) out.model = model[1]
  return out
}

export function parseAgentOutput(provider: AgentProvider, stdout: string): AgentUsage {
  switch (provider) {
    case 'claude-code':
      return parseClaude(stdout)
    case 'codex':
      return parseCodex(stdout)
    case 'aider':
      return parseAider(stdout)
    case 'command':
      return {}
  }
}

/** The most one run is believed to cost, in US dollars: a figure above it is no report (see `credibleUsage`). */
export const MAX_RUN_COST_USD = 1000
/** The most tokens one run is believed to use, each way. */
export const MAX_RUN_TOKENS = 1e10

/**
 * `u` without figures no run can have: negative, not finite, a cost above MAX_RUN_COST_USD or tokens
 * above MAX_RUN_TOKENS. Whoever writes them (a result file is the agent's, and the agent read hostile
 * text) could otherwise spend the App's monthly cost cap in one run (`"costUsd": 1e308` blocked every
 * later run of the month) — such a figure is dropped, as if the run had reported none.
 */
export function credibleUsage(u: AgentUsage): AgentUsage {
  const within = (v: number | undefined, max: number) => (v !== undefined && Number.isFinite(v) && v >= 0 && v <= max ? v : undefined)
  return { ...u, tokensIn: within(u.tokensIn, MAX_RUN_TOKENS), tokensOut: within(u.tokensOut, MAX_RUN_TOKENS), costUsd: within(u.costUsd, MAX_RUN_COST_USD) }
}

/**
 * What a run reports: the CLI's own account (`fromCli`, parseAgentOutput) and the result file
 * (`fromFile`). The CLI's tokens, cost and model win: the result file is written by the agent's tools,
 * which a prompt in the report can steer (a `"costUsd": 0` would slip past the cost cap); the file fills
 * only what the CLI does not report (a `command` agent reports nothing else; codex no cost). The file's
 * summary wins (what the agent says it did). Both bounded by `credibleUsage`.
 */
export function runUsage(fromCli: AgentUsage, fromFile: AgentUsage): AgentUsage {
  const cli = credibleUsage(fromCli)
  const file = credibleUsage(fromFile)
  return {
    model: cli.model ?? file.model,
    tokensIn: cli.tokensIn ?? file.tokensIn,
    tokensOut: cli.tokensOut ?? file.tokensOut,
    costUsd: cli.costUsd ?? file.costUsd,
    summary: file.summary ?? cli.summary,
  }
}

/** The result file (any provider): {"model","tokensIn","tokensOut","costUsd","summary"}. */
export function parseResultFile(text: string): AgentUsage {
  try {
    const r = JSON.parse(text) as Record<string, unknown>
    return {
      model: typeof r.model === 'string' ? r.model.slice(0, 200) : undefined,
      tokensIn: num(r.tokensIn) !== undefined ? Math.max(0, Math.round(num(r.tokensIn)!)) : undefined,
      tokensOut: num(r.tokensOut) !== undefined ? Math.max(0, Math.round(num(r.tokensOut)!)) : undefined,
      costUsd: num(r.costUsd) !== undefined ? Math.max(0, num(r.costUsd)!) : undefined,
      summary: typeof r.summary === 'string' ? r.summary.slice(0, 4000) : undefined,
    }
  } catch {
    return {}
  }
}
