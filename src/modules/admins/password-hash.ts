/**
 * The argon2id parameters of new password hashes (admin create, reset, the setup link). A check reads its
 * parameters from the stored PHC string, so a hash made under another FIXLOOP_PASSWORD_HASH_MIB still
 * verifies: a changed setting applies to passwords set from then on.
 */
import { randomBytes } from 'node:crypto'
import { PASSWORD_HASH_MIB_DEFAULT } from '../../core/password-cost'

const PASSES = 2

export interface PasswordHasher {
  hash(password: string): Promise<string>
  /** Checks a password against a stored hash (its own parameters). */
  verify(password: string, hash: string): Promise<boolean>
  /** The check a sign-in without a stored hash (unknown email, SSO-only admin) pays: as long as a wrong password's. */
  verifyNothing(password: string): Promise<void>
}

// One throwaway hash per memory size, shared by every service in the process (tests build many).
const dummies = new Map<number, Promise<string>>()

export function passwordHasher(mib: number = PASSWORD_HASH_MIB_DEFAULT): PasswordHasher {
  const hash = (password: string) => Bun.password.hash(password, { algorithm: 'argon2id', memoryCost: mib * 1024, timeCost: PASSES })
  return {
    hash,
    verify: (password, stored) => Bun.password.verify(password, stored),
    async verifyNothing(password) {
      let dummy = dummies.get(mib)
      if (!dummy) dummies.set(mib, (dummy = hash(randomBytes(16).toString('hex'))))
      await Bun.password.verify(password, await dummy)
    },
  }
}
