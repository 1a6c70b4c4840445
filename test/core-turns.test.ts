/** src/core/turns.ts: pieces run one at a time in call order; a failure reaches its caller only. */
import { expect, test } from 'bun:test'
import { createTurns } from '../src/core/turns'

test('pieces never overlap and run in call order; a failed piece does not stop the next; tail follows the last', async () => {
  const turns = createTurns()
  const log: string[] = []
  let running = 0
  const piece = (name: string, ms: number, fail = false) => async () => {
    expect(++running).toBe(1)
    log.push(`${name}:start`)
    await Bun.sleep(ms)
    log.push(`${name}:end`)
    running--
    if (fail) throw new Error(name)
    return name
  }
  const a = turns(piece('a', 20))
  const b = turns(piece('b', 1, true))
  const tailBeforeC = turns.tail
  const c = turns(piece('c', 5))
  expect(turns.tail).not.toBe(tailBeforeC)
  expect(await a).toBe('a')
  await expect(b).rejects.toThrow('b')
  expect(await c).toBe('c')
  await turns.tail
  expect(log).toEqual(['a:start', 'a:end', 'b:start', 'b:end', 'c:start', 'c:end'])
})
