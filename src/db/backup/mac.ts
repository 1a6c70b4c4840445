/**
 * The archive's MAC: HMAC-SHA256 over the exact bytes of `manifest.json`, keyed by a key derived from the
 * master key (its own purpose string, so a MAC says nothing about the sealing key or URL signatures). The
 * manifest holds every file's size and SHA-256, so the MAC covers the whole archive: a self-consistent
 * tampered archive (files changed, manifest recomputed) fails it unless the forger holds the master key.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'

export const MAC_NAME = 'manifest.hmac'

function macKey(masterKey: Uint8Array): Buffer {
  return createHmac('sha256', masterKey).update('fixloop/backup-manifest-mac/v1').digest()
}

/** The text of the `manifest.hmac` entry: `hmac-sha256:<hex>` and a newline. */
export function manifestMac(masterKey: Uint8Array, manifest: Uint8Array): string {
  return `hmac-sha256:${createHmac('sha256', macKey(masterKey)).update(manifest).digest('hex')}\n`
}

/** Constant-time check of a `manifest.hmac` entry against the manifest's bytes. */
export function macMatches(masterKey: Uint8Array, manifest: Uint8Array, entry: string): boolean {
  const want = Buffer.from(manifestMac(masterKey, manifest))
  const got = Buffer.from(entry)
  return want.length === got.length && timingSafeEqual(want, got)
}
