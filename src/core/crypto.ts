/**
 * Encryption at rest for signing secrets and host tokens: AES-256-GCM under the master key.
 * Format: "v1:" + base64(iv[12] | tag[16] | ciphertext). The version prefix leaves room for key rotation.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto'

export class SecretBox {
  constructor(private readonly key: Uint8Array) {
    if (key.length !== 32) throw new Error('master key must be 32 bytes')
  }

  seal(plain: Uint8Array): string {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.key, iv)
    const body = Buffer.concat([cipher.update(plain), cipher.final()])
    return 'v1:' + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')
  }

  open(sealed: string): Buffer {
    if (!sealed.startsWith('v1:')) throw new Error('unknown sealed secret format')
    const raw = Buffer.from(sealed.slice(3), 'base64')
    const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12))
    decipher.setAuthTag(raw.subarray(12, 28))
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()])
  }
}

/** The key upload URLs are signed with: a separate key per purpose, so a leaked URL signature says nothing about the sealing key. */
export const urlSigningKeyOf = (masterKey: Uint8Array): Buffer => createHmac('sha256', masterKey).update('fixloop/upload-urls/v1').digest()
