/**
 * Upload routes: POST /v1/feedback/upload-url (widget credentials, presign rate limits) and, for the
 * embedded store, PUT/GET /v1/uploads/:appId/:name on signed URLs.
 */
import { Elysia } from 'elysia'
import { authenticateWidget, type AuthDeps } from '../../http/auth'
import { accessGuard } from '../../http/access-guard'
import { BEARER_PUB, errorSchemas, signedUrlErrorSchemas, WIDGET_AUTH_ERRORS } from '../../http/error-docs'
import type { EmbeddedBlobStore } from '../../blobs/embedded-store'
import type { UploadsService } from './service'
import { SignedQuery, UploadParams, UploadUrlBody, UploadUrlResponse } from './model'
import { t } from 'elysia'
import { POW_HEADER, type PowService } from '../../abuse/pow-service'

/** The absolute URL a client reached us at (FIXLOOP_PUBLIC_URL when set, else the request's own). */
export function baseUrlOf(request: Request, publicUrl: string | undefined): string {
  return publicUrl ?? new URL(request.url).origin
}

export function uploadUrlRoutes(auth: AuthDeps, uploads: UploadsService, publicUrl: string | undefined, pow: PowService) {
  return new Elysia({ name: 'upload-url' })
    .use(accessGuard())
    .derive(async ({ request, server }) => ({ caller: await authenticateWidget(auth, request, server, 'presign') }))
    .post(
      '/v1/feedback/upload-url',
      async ({ caller, body, request }) => {
        // Public mode on an App that asks for proof of work: a valid, unused solution or 403 (docs/api.md).
        if (!caller.user) await pow.check({ id: caller.app.row.id, proofOfWork: caller.app.row.proofOfWork }, caller.clientKey, request.headers.get(POW_HEADER), 'upload')
        return uploads.issue({ id: caller.app.row.id, orgId: caller.app.row.orgId, replayMode: caller.app.row.replayMode }, body, baseUrlOf(request, publicUrl))
      },
      {
      access: 'widget',
      body: UploadUrlBody,
      parse: 'json',
      headers: t.Object({
        'x-service-user-token': t.Optional(t.String({ description: 'HS256 user token (private mode)' })),
        [POW_HEADER]: t.Optional(t.String({ description: 'Public mode, when the App asks for proof of work: a solved challenge (as on POST /v1/feedback)' })),
      }),
      response: { 200: UploadUrlResponse, ...errorSchemas(...WIDGET_AUTH_ERRORS, 'proof_of_work_required', 'proof_of_work_invalid', 'invalid_body', 'payload_too_large') },
      detail: {
        summary: 'Get a presigned URL to upload a screenshot or attachment',
        description:
          'PUT exactly byteSize bytes of contentType to the returned url with the returned headers, then reference the key in a submission. The URL expires after 15 minutes. Kind "replay" (a session replay: application/gzip or application/json of rrweb events) only when the App\'s replay mode is not off.',
        tags: ['widget'],
        security: BEARER_PUB,
      },
      },
    )
}

/** `appIsLive`: whether the App an upload URL was issued to still exists (CredentialDirectory.appById). */
export function embeddedUploadRoutes(uploads: UploadsService, embedded: EmbeddedBlobStore, appIsLive: (appId: string) => Promise<boolean>) {
  return new Elysia({ name: 'embedded-uploads' })
    .use(accessGuard())
    .put(
      '/v1/uploads/:appId/:name',
      async ({ params, query, request, set }) => {
        await uploads.acceptEmbeddedPut(embedded, `${params.appId}/${params.name}`, query, request, appIsLive)
        set.status = 200
        return { key: `${params.appId}/${params.name}`, uploaded: true as const }
      },
      {
        access: 'signed_url',
        params: UploadParams,
        query: SignedQuery,
        parse: 'none',
        response: {
          200: t.Object({ key: t.String(), uploaded: t.Literal(true) }),
          ...signedUrlErrorSchemas('invalid_body', 'invalid_signature', 'url_expired', 'unknown_app', 'not_found', 'already_uploaded', 'payload_too_large'),
        },
        detail: { summary: 'Upload an object to the embedded store (signed URL from upload-url)', tags: ['uploads'] },
      },
    )
    .get('/v1/uploads/:appId/:name', ({ params, query }) => uploads.serveEmbedded(embedded, `${params.appId}/${params.name}`, query), {
      access: 'signed_url',
      params: UploadParams,
      query: SignedQuery,
      response: { 200: t.Unknown({ description: 'The object, with its content type, nosniff and Content-Disposition: attachment' }), ...signedUrlErrorSchemas('invalid_body', 'invalid_signature', 'url_expired', 'not_found') },
      detail: { summary: 'Download an object from the embedded store (signed URL from GET /v1/feedback/:id)', tags: ['uploads'] },
    })
}
