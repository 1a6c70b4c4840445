/**
 * The PostgreSQL schema: one file per table group, named like src/db/schema (the SQLite tree). drizzle has
 * no dialect-neutral schema, so both trees are written out and test/schema-parity.test.ts keeps them alike.
 */
export * from './tenants'
export * from './feedback'
export * from './uploads'
export * from './agents'
export * from './events'
export * from './admins'
export * from './webhooks'
export * from './ops'
export * from './credentials'
export * from './mail'
export * from './abuse'
