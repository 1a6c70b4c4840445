/**
 * The PostgreSQL side's last line of defence of the NUL rule (src/db/pg/client-options.ts): a string
 * parameter holding U+0000 that slipped past the HTTP edge is refused before the statement is sent, as
 * 400 invalid_body, never the server's "invalid byte sequence" error (a 500). The transaction it ran in
 * is untouched, and in a group-commit batch the other writes commit.
 */
import { expect, test } from 'bun:test'
import { ApiError } from '../../src/core/errors'
import { openPool } from '../../src/db/pg/client-options'
import { PgGroupCommitter } from '../../src/db/pg/group-commit'
import { sharedPostgres } from '../dialects'

async function pool() {
  const server = await sharedPostgres()
  const p = openPool(await server.createDatabase('nul'), 4)
  await p.query('CREATE TABLE t (id serial PRIMARY KEY, v text NOT NULL)')
  return p
}

test('pool.query and client.query: NUL in a parameter (a string or an array) is invalid_body; the transaction goes on', async () => {
  const p = await pool()
  try {
    const refused = await p.query('SELECT $1::text AS v', ['a\u0000b']).catch((e) => e)
    expect(refused).toBeInstanceOf(ApiError)
    expect([refused.code, refused.status]).toEqual(['invalid_body', 400])
    const client = await p.connect()
    try {
      await client.query('BEGIN')
      await client.query('INSERT INTO t (v) VALUES ($1)', ['before'])
      expect(await client.query('INSERT INTO t (v) SELECT unnest($1::text[])', [['ok', 'x\u0000']]).catch((e) => e.code)).toBe('invalid_body')
      expect(await client.query({ text: 'INSERT INTO t (v) VALUES ($1)', values: ['y\u0000'] }).catch((e) => e.code)).toBe('invalid_body')
      await client.query('INSERT INTO t (v) VALUES ($1)', ['after'])
      await client.query('COMMIT')
    } finally {
      client.release()
    }
    expect((await p.query('SELECT v FROM t ORDER BY id')).rows.map((r) => r.v)).toEqual(['before', 'after'])
    // Neighbours of NUL are ordinary text.
    expect((await p.query('SELECT $1::text AS v', ['\u0001\u007f\ufffd'])).rows[0].v).toBe('\u0001\u007f\ufffd')
  } finally {
    await p.end()
  }
})

test('group commit: a write with NUL rejects alone with invalid_body; the others of its batch commit', async () => {
  const p = await pool()
  try {
    const gc = new PgGroupCommitter(p)
    const insert = (v: string) => gc.run(async ({ client }) => (await client.query('INSERT INTO t (v) VALUES ($1) RETURNING id', [v])).rows[0].id)
    const results = await Promise.allSettled([insert('a'), insert('b\u0000'), insert('c'), insert('\u0000'), insert('e')])
    expect(results.map((r) => (r.status === 'fulfilled' ? 'ok' : (r.reason as ApiError).code))).toEqual(['ok', 'invalid_body', 'ok', 'invalid_body', 'ok'])
    expect((await p.query('SELECT v FROM t ORDER BY v')).rows.map((r) => r.v)).toEqual(['a', 'c', 'e'])
  } finally {
    await p.end()
  }
})
