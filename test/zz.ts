import { startPostgres } from './pg-server'
const pg = await startPostgres()
const url = await pg.createDatabase()
for (let i = 0; i < 3; i++) {
  const p = Bun.spawn(['bun', '/tmp/pgexp/pjkill.ts', url], { stdout: 'inherit', stderr: 'inherit', cwd: '/tmp/pgexp' })
  const timer = setTimeout(() => p.kill(), 30000)
  await p.exited; clearTimeout(timer)
  console.log('--- run', i)
}
await pg.stop()
