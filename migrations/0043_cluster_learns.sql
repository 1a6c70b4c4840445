CREATE TABLE `removed_reports` (
	`seq` integer PRIMARY KEY NOT NULL,
	`feedback_id` text NOT NULL,
	`removed_at` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `spam_learning` ADD `cleared` text DEFAULT '[]' NOT NULL;--> statement-breakpoint
CREATE INDEX `spam_learning_updated_idx` ON `spam_learning` (`updated_at`);