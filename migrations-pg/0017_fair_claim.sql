-- Issue 38: a report's `process` job carries its App, so the claim can take the Apps' queues round-robin.
-- Jobs queued before this version get theirs from the report (a job whose report is gone keeps NULL: it is
-- claimed with the jobs that have no App).
UPDATE "jobs" SET "app_id" = "feedback"."app_id" FROM "feedback" WHERE "feedback"."id" = "jobs"."feedback_id" AND "jobs"."kind" = 'process' AND "jobs"."app_id" IS NULL;--> statement-breakpoint
CREATE INDEX "jobs_app_due_idx" ON "jobs" USING btree ("kind","app_id","run_after","id");
