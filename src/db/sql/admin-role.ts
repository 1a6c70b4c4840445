/**
 * Changing a dashboard admin's role in an Org (`fixloop admin role`): the reads both dialects run in the
 * change's transaction (src/db/sqlite/admins.ts, src/db/pg/admins.ts), `${ADMIN}`/`${ORG}` the side's
 * placeholders. The role is read from these rows on every request (modules/admins/service.ts `identity`),
 * never kept in the session, so the admin's open sessions act with the new role from their next request.
 */

export const membershipSql = (admin: string, org: string) => `SELECT role FROM admin_memberships WHERE admin_id = ${admin} AND org_id = ${org}`

/** The Org's owners other than this admin: demoting the last one would leave the Org without one. */
export const otherOrgOwnersSql = (admin: string, org: string) => `SELECT COUNT(*) AS n FROM admin_memberships WHERE org_id = ${org} AND role = 'owner' AND admin_id <> ${admin}`

export const setMembershipRoleSql = (role: string, admin: string, org: string) => `UPDATE admin_memberships SET role = ${role} WHERE admin_id = ${admin} AND org_id = ${org}`

/**
 * An instance owner given a role in one Org stops owning the instance: that Org, with that role, is then
 * its only one (an instance owner holds no memberships of its own, but any left from before go too).
 */
export const leaveInstanceSql = (admin: string) => `DELETE FROM admin_memberships WHERE admin_id = ${admin}`
