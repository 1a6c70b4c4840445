CREATE TABLE "pow_spent" (
	"signature" text PRIMARY KEY NOT NULL,
	"expires_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "spam_learning" (
	"app_id" text PRIMARY KEY NOT NULL,
	"factors" text DEFAULT '{}' NOT NULL,
	"not_spam" integer DEFAULT 0 NOT NULL,
	"marked_spam" integer DEFAULT 0 NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "apps" ADD COLUMN "proof_of_work" text DEFAULT 'off' NOT NULL;--> statement-breakpoint
ALTER TABLE "apps" ADD COLUMN "spam_events" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "feedback" ADD COLUMN "spam_score" double precision;--> statement-breakpoint
ALTER TABLE "feedback" ADD COLUMN "spam_reasons" text;--> statement-breakpoint
ALTER TABLE "feedback" ADD COLUMN "spam_marked_at" bigint;--> statement-breakpoint
CREATE INDEX "pow_spent_expires_idx" ON "pow_spent" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "feedback_spam_idx" ON "feedback" USING btree ("org_id","id") WHERE spam_marked_at IS NOT NULL;