/**
 * What a test helper started for the current test file and stops after it (a PostgreSQL, a redis-server,
 * s3rver, open stores), run by the preload's afterAll once the file's own hooks have run (test/preload.ts).
 *
 * Why not an afterAll in the helper's module: that hook belongs to the first file that loads the module.
 * Under `bun test --no-isolate` the module stays loaded for the worker's next files, whose runs would then
 * find the first file's servers stopped and never stop their own. A preload's afterAll runs after every
 * file, isolated or not.
 */
const jobs: (() => Promise<void> | void)[] = []

/** Runs `stop` after the current test file (last registered, first run). */
export function atFileEnd(stop: () => Promise<void> | void): void {
  jobs.push(stop)
}

/** Keys of the stops registered with onceAtFileEnd for the current file. */
const registeredKeys = new Set<string>()

/**
 * Runs `stop` after the current test file, registered once for `key` however often it is called in the
 * file (a helper that starts its servers on first use calls it on every use); the next file registers
 * it again.
 */
export function onceAtFileEnd(key: string, stop: () => Promise<void> | void): void {
  if (registeredKeys.has(key)) return
  registeredKeys.add(key)
  atFileEnd(async () => {
    registeredKeys.delete(key)
    await stop()
  })
}

/** Runs every registered stop, newest first; one that fails does not keep the others from running. */
export async function runFileEnd(): Promise<void> {
  const errors: unknown[] = []
  for (const stop of jobs.splice(0).reverse()) {
    try {
      await stop()
    } catch (e) {
      errors.push(e)
    }
  }
  if (errors.length) throw errors[0]
}
