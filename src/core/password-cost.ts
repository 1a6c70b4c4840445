/**
 * FIXLOOP_PASSWORD_HASH_MIB's bounds: the memory argon2id uses for each new password hash (2 passes).
 * 64 MiB (the default) costs ~0.2 CPU-s a hash or a check; 19 MiB is OWASP's floor for argon2id at
 * 2 passes, so nothing weaker can be configured.
 */
export const PASSWORD_HASH_MIB_DEFAULT = 64
export const PASSWORD_HASH_MIB_MIN = 19
export const PASSWORD_HASH_MIB_MAX = 1024
