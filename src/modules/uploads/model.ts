/** Schemas of the upload routes (CONTRACT.md "Upload URL"). */
import { t } from 'elysia'
import { oneOf, int } from '../../core/schema'
import { ALLOWED_CONTENT_TYPES } from '../../blobs/blob-store'

/** 'replay': a session replay (rrweb events, docs/api.md "Session replay"), only when the App records them. */
export const UPLOAD_KINDS = ['screenshot', 'attachment', 'recording', 'replay'] as const

export const UploadUrlBody = t.Object(
  {
    contentType: t.String({ minLength: 1, maxLength: 255, description: `One of: ${ALLOWED_CONTENT_TYPES.join(', ')}` }),
    byteSize: int({ minimum: 1, description: 'Exact size of the object to PUT; at most 15 MB (413 above)' }),
    kind: oneOf(UPLOAD_KINDS),
    filename: t.Optional(t.String({ minLength: 1, maxLength: 255 })),
  },
  { additionalProperties: false },
)

export const UploadUrlResponse = t.Object(
  {
    key: t.String({ description: 'Reference it in attachments[].key or componentTarget.screenshotKey' }),
    url: t.String({ description: 'Absolute URL to PUT exactly byteSize bytes to' }),
    method: t.Literal('PUT'),
    headers: t.Record(t.String(), t.String(), { description: 'Headers the PUT must carry' }),
    expiresAt: t.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
)

export const UploadParams = t.Object({ appId: t.String(), name: t.String() })
export const SignedQuery = t.Object({ expires: t.Optional(t.String()), sig: t.Optional(t.String()) })
