CREATE TABLE "deferred_pr_changes" (
	"feedback_id" text PRIMARY KEY NOT NULL,
	"app_id" text NOT NULL,
	"pr_url" text NOT NULL,
	"change" text NOT NULL,
	"received_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "mail_outbox" ADD COLUMN "lead_id" text;--> statement-breakpoint
CREATE INDEX "mail_outbox_lead_idx" ON "mail_outbox" USING btree ("lead_id","email_hash");