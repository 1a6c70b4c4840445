ALTER TABLE "apps" ADD COLUMN "replay_mode" text DEFAULT 'off' NOT NULL;--> statement-breakpoint
ALTER TABLE "apps" ADD COLUMN "replay_seconds" integer DEFAULT 60 NOT NULL;--> statement-breakpoint
ALTER TABLE "uploads" ADD COLUMN "replay_state" text;--> statement-breakpoint
CREATE INDEX "uploads_replay_pending_idx" ON "uploads" USING btree ("created_at") WHERE replay_state = 'pending' AND feedback_id IS NOT NULL;