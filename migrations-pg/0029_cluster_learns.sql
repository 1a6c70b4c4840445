CREATE TABLE "removed_reports" (
	"seq" bigint PRIMARY KEY NOT NULL,
	"feedback_id" text NOT NULL,
	"removed_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "spam_learning" ADD COLUMN "cleared" text DEFAULT '[]' NOT NULL;--> statement-breakpoint
CREATE INDEX "spam_learning_updated_idx" ON "spam_learning" USING btree ("updated_at");