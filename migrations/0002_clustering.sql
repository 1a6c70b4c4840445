ALTER TABLE `feedback` ADD `failure_reason` text;--> statement-breakpoint
ALTER TABLE `feedback` ADD `merge_locked` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `jobs` ADD `app_id` text;