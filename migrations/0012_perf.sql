DROP INDEX IF EXISTS `feedback_dup_idx`;--> statement-breakpoint
CREATE INDEX `feedback_dup_recent_idx` ON `feedback` (`duplicate_of_id`,`id`,`created_at`) WHERE duplicate_of_id IS NOT NULL;
