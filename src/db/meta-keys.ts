/** The keys of the `instance_meta` table, on either storage (the store's `meta` reads and writes them: src/db/store.ts). */
export const META = {
  /** HMAC-SHA256 of a constant under the master key (hex): proves a key is the one the secrets were sealed with. */
  masterKeyCheck: 'master_key_check',
  /** The fixloop version that last applied a migration. */
  migratedBy: 'migrated_by_version',
  /** Rewritten by every /readyz call: proves the database takes a write. */
  readinessProbe: 'readiness_probe',
  /** '1' or '0': FIXLOOP_WEBHOOK_ALLOW_PRIVATE of the server last started on this database (the CLI reads it). */
  webhookAllowPrivate: 'webhook_allow_private',
  /**
   * A random id (hex) made once per database: the nodes of one cluster share it, so keys they keep in a
   * Redis that another fixloop (another database) may share are told apart by it.
   */
  clusterId: 'cluster_id',
} as const
