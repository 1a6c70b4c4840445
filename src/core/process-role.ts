/**
 * Which fixloop process this is: the server (`fixloop serve`, and in-process test servers) or one CLI
 * command. A check that reads this process's environment (the address guards' FIXLOOP_*_ALLOW_PRIVATE)
 * must say what is true for the process that refused: a CLI command refused with "(… on the server
 * allows it)" while the server had the variable and the command did not. main.ts sets it once at start.
 */
let role: 'serve' | 'command' = 'serve'

/** Called once by main.ts before a command runs. */
export function setProcessRole(r: 'serve' | 'command'): void {
  role = r
}

/** Which process this is (set by main.ts; in-process servers and tests are 'serve'). */
export const processRole = (): 'serve' | 'command' => role

/**
 * How to lift an address guard that `variable` controls, as true for this process: on the server, set it
 * on "fixloop serve"; in a CLI command, set it for this command (the server checks again before every
 * connection, so it needs the variable too).
 */
export function allowPrivateHint(variable: string): string {
  return role === 'serve'
    ? `${variable}=1 on "fixloop serve" allows it`
    : `${variable}=1 for this command allows it (and on "fixloop serve", which checks again before every connection)`
}
