/**
 * Removing a dashboard admin (`fixloop admin remove`): the statements both dialects run in one
 * transaction (src/db/sqlite/admins.ts, src/db/pg/admins.ts), `${ADMIN}` the side's placeholder. The
 * admin's sessions go with it (a signed-in browser is signed out at its next request), and so do its
 * memberships and read marks; the audit log keeps what the admin did, by id.
 */

/** Instance owners other than this admin: removing the last one would leave the instance without one. */
export const otherOwnersSql = (admin: string) => `SELECT COUNT(*) AS n FROM admins WHERE is_owner AND id <> ${admin}`

export const removeAdminSql = (admin: string) => [
  `DELETE FROM admin_sessions WHERE admin_id = ${admin}`,
  `DELETE FROM admin_memberships WHERE admin_id = ${admin}`,
  `DELETE FROM admin_reads WHERE admin_id = ${admin}`,
  `DELETE FROM admins WHERE id = ${admin}`,
]
