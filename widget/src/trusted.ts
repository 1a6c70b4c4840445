/**
 * Trusted Types: under `require-trusted-types-for 'script'` a plain string may not become a script URL
 * or HTML. The widget creates one policy, named `fixloop`, that blesses exactly three values: the URL of
 * its own lazily loaded UI file, the blob: URL of its proof-of-work Worker (its own bundled code) and the
 * fixed blank document of the screenshot renderer's style sandbox.
 * Anything else passed to it throws. Without Trusted Types (or when the page's `trusted-types` directive
 * does not allow the name) the plain string is used and the browser's rules decide.
 */

/** The document modern-screenshot reads default styles from (its own `srcdoc`, blessed here). */
export const SANDBOX_HTML = '<!DOCTYPE html><meta charset="UTF-8"><title></title><body>'

interface Policy {
  createScriptURL(url: string): unknown
  createHTML(html: string): unknown
}

export const POLICY_NAME = 'fixloop'
const allowedScripts = new Set<string>()
let policy: Policy | null | undefined

function fixloopPolicy(): Policy | null {
  if (policy !== undefined) return policy
  const factory = (window as unknown as { trustedTypes?: { createPolicy(name: string, rules: object): Policy } }).trustedTypes
  try {
    policy = factory
      ? factory.createPolicy(POLICY_NAME, {
          createScriptURL: (url: string) => {
            if (!allowedScripts.has(url)) throw new TypeError(`fixloop policy: ${url} is not the widget's script`)
            return url
          },
          createHTML: (html: string) => {
            if (html !== SANDBOX_HTML) throw new TypeError('fixloop policy: unexpected HTML')
            return html
          },
        })
      : null
  } catch (e) {
    console.warn(`[fixloop] could not create the Trusted Types policy "${POLICY_NAME}" (add it to your trusted-types directive):`, (e as Error).message)
    policy = null
  }
  return policy
}

/** Allows one script URL (the UI file) through the policy. */
export function allowScript(url: string): void {
  allowedScripts.add(url)
}

/** The value to assign to a script's `src`: a TrustedScriptURL when the page enforces Trusted Types. */
export function scriptURL(url: string): string {
  return (fixloopPolicy()?.createScriptURL(url) ?? url) as string
}

/** The sandbox document as TrustedHTML when the page enforces Trusted Types. */
export function sandboxHTML(): string {
  return (fixloopPolicy()?.createHTML(SANDBOX_HTML) ?? SANDBOX_HTML) as string
}
