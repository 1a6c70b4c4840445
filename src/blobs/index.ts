/** Picks the blob store from the configuration: S3/MinIO when FIXLOOP_S3_* is set, else embedded. */
import type { Config } from '../config'
import { systemClock, type Clock } from '../core/clock'
import type { BlobStore } from './blob-store'
import { EmbeddedBlobStore } from './embedded-store'
import { S3BlobStore } from './s3-store'

export function createBlobStore(ctx: { config: Readonly<Config>; urlSigningKey: Uint8Array; clock?: Clock }): BlobStore {
  if (ctx.config.s3) return new S3BlobStore(ctx.config.s3, ctx.clock ?? systemClock)
  return new EmbeddedBlobStore(ctx.config.dataDir, ctx.urlSigningKey)
}
