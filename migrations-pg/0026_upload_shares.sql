CREATE TABLE "upload_shares" (
	"key" text NOT NULL,
	"feedback_id" text NOT NULL,
	CONSTRAINT "upload_shares_key_feedback_id_pk" PRIMARY KEY("key","feedback_id")
);
--> statement-breakpoint
CREATE INDEX "upload_shares_feedback_idx" ON "upload_shares" USING btree ("feedback_id");--> statement-breakpoint
-- Reports stored before this table that list an upload another report owns (attachments, then screenshots).
INSERT INTO "upload_shares" ("key", "feedback_id")
  SELECT u.key, f.id FROM feedback f
    CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN f.attachments LIKE '[%' THEN f.attachments::jsonb ELSE '[]'::jsonb END) a
    JOIN uploads u ON u.key = a->>'key'
  WHERE f.attachments IS NOT NULL AND u.feedback_id IS NOT NULL AND u.feedback_id <> f.id
  ON CONFLICT DO NOTHING;
--> statement-breakpoint
INSERT INTO "upload_shares" ("key", "feedback_id")
  SELECT u.key, f.id FROM feedback f
    JOIN uploads u ON u.key = (CASE WHEN f.component_target LIKE '{%' THEN f.component_target::jsonb ELSE '{}'::jsonb END)->>'screenshotKey'
  WHERE f.component_target IS NOT NULL AND u.feedback_id IS NOT NULL AND u.feedback_id <> f.id
  ON CONFLICT DO NOTHING;
