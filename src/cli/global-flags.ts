/** Global flags given before the command. */
/**
 * Lets global flags come before the command (`fixloop --data-dir /srv org list`): they are moved after
 * it, where every command's parser reads them.
 */
export function hoistGlobalFlags(argv: string[]): string[] {
  const globals: string[] = []
  let i = 0
  while (i < argv.length && argv[i].startsWith('-')) {
    const a = argv[i]
    if (a === '--data-dir') {
      if (argv[i + 1] === undefined) break
      globals.push(a, argv[i + 1])
      i += 2
    } else if (a.startsWith('--data-dir=') || a === '--json' || a === '--help' || a === '-h' || a === '--version' || a === '-v') {
      globals.push(a)
      i++
    } else break
  }
  const rest = argv.slice(i)
  // Only global flags: `fixloop --data-dir D -v` is the version, anything else (`--data-dir D --help`) help.
  if (rest.length === 0) {
    if (globals.length === 0) return []
    if (globals.includes('-v') || globals.includes('--version')) return ['version', ...globals.filter((a) => a !== '-v' && a !== '--version')]
    return ['help']
  }
  // `fixloop --help` / `--version` / `-v` alone keep their meaning; before a command they are that command's flags.
  const [command, ...args] = rest
  return [command, ...args, ...globals]
}

