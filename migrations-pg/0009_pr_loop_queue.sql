CREATE TABLE "closed_pull_requests" (
	"feedback_id" text PRIMARY KEY NOT NULL,
	"app_id" text NOT NULL,
	"pr_url" text NOT NULL,
	"closed_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "pending_reviews" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"app_id" text NOT NULL,
	"feedback_id" text NOT NULL,
	"pr_url" text NOT NULL,
	"text" text NOT NULL,
	"author" text,
	"received_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "slack_connections" ADD COLUMN "drain_owner" text;--> statement-breakpoint
ALTER TABLE "slack_connections" ADD COLUMN "drain_until" bigint;--> statement-breakpoint
CREATE INDEX "closed_pull_requests_closed_idx" ON "closed_pull_requests" USING btree ("closed_at");--> statement-breakpoint
CREATE INDEX "pending_reviews_feedback_idx" ON "pending_reviews" USING btree ("feedback_id","id");