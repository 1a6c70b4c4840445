CREATE TABLE "mail_confirmations" (
	"id" text PRIMARY KEY NOT NULL,
	"app_id" text NOT NULL,
	"org_id" text NOT NULL,
	"email_hash" text NOT NULL,
	"email_sealed" text,
	"state" text NOT NULL,
	"nonce" text,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" bigint NOT NULL,
	"lease_until" bigint,
	"last_error" text,
	"created_at" bigint NOT NULL,
	"sent_at" bigint,
	"confirmed_at" bigint
);
--> statement-breakpoint
ALTER TABLE "feedback" ADD COLUMN "notify_asked_at" bigint;--> statement-breakpoint
ALTER TABLE "mail_outbox" ADD COLUMN "needs_confirm" boolean DEFAULT false NOT NULL;--> statement-breakpoint
CREATE INDEX "mail_confirmations_due_idx" ON "mail_confirmations" USING btree ("next_attempt_at") WHERE state = 'pending';--> statement-breakpoint
CREATE INDEX "mail_confirmations_app_sent_idx" ON "mail_confirmations" USING btree ("app_id","sent_at");--> statement-breakpoint
CREATE INDEX "mail_confirmations_hash_sent_idx" ON "mail_confirmations" USING btree ("email_hash","sent_at");--> statement-breakpoint
CREATE INDEX "feedback_notify_ask_idx" ON "feedback" USING btree ("id") WHERE notify_email_sealed IS NOT NULL AND notify_asked_at IS NULL AND submitted_mode = 'public';--> statement-breakpoint
-- A public-mode report's mail still waiting: its address was never confirmed (docs/email.md).
UPDATE "mail_outbox" SET "needs_confirm" = TRUE WHERE "state" = 'pending' AND "feedback_id" IN (SELECT "id" FROM "feedback" WHERE "submitted_mode" = 'public');--> statement-breakpoint
-- A duplicate shows its lead's pull request (issue 36.3): the ones attached after the PR opened had none.
UPDATE "feedback" d SET "merge_request_url" = l."merge_request_url" FROM "feedback" l WHERE l."id" = d."duplicate_of_id" AND d."merge_request_url" IS DISTINCT FROM l."merge_request_url";
