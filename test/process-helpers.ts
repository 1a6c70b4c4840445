/**
 * Looking for processes a run left behind, the way an operator would: `ps` on the host.
 */

/** Command lines of every live process on the host containing `marker` (zombies excluded). */
export function survivors(marker: string): string[] {
  const ps = Bun.spawnSync(['ps', '-eo', 'stat=,args='], { stdout: 'pipe' }).stdout.toString()
  return ps.split('\n').filter((l) => l.includes(marker) && !l.trim().startsWith('Z') && !l.includes('ps -eo'))
}
