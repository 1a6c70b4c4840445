/**
 * Warns about FIXLOOP_* variables fixloop does not know (`…_DATABASE_URI` for `…_DATABASE_URL`,
 * `…_DATA_DIRR`, `…_PROT`): each would otherwise pass silently, and a mistyped database URL
 * or data dir starts a new, empty SQLite instance. One line per name, with the closest known name; the
 * value is never printed (it may hold a password). Known names come from the one list, src/core/settings.ts.
 */
import { KNOWN_VARIABLES } from '../core/settings'
import { closest } from './suggest'

/** One warning line per unknown FIXLOOP_* name in `env`, in name order. */
export function unknownSettingWarnings(env: Record<string, string | undefined>): string[] {
  const known = new Set(KNOWN_VARIABLES)
  return Object.keys(env)
    .filter((name) => name.startsWith('FIXLOOP_') && !known.has(name))
    .sort()
    .map((name) => {
      const near = closest(name, KNOWN_VARIABLES)
      return `fixloop: warning: unknown setting ${name} is ignored${near ? ` (did you mean ${near}?)` : ''}; "fixloop --help" lists the settings`
    })
}
