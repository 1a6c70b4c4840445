DROP INDEX "tracker_issues_issue_uq";--> statement-breakpoint
ALTER TABLE "tracker_issues" ADD COLUMN "project" text DEFAULT '' NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "tracker_issues_issue_uq" ON "tracker_issues" USING btree ("app_id","kind","project","issue_id");--> statement-breakpoint
-- Existing links were made in the App's current project (a link of another kind is frozen anyway).
UPDATE "tracker_issues" t SET "project" = c."project" FROM "tracker_connections" c WHERE c."app_id" = t."app_id" AND c."kind" = t."kind" AND t."project" = '';
