CREATE TABLE `pow_spent` (
	`signature` text PRIMARY KEY NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `pow_spent_expires_idx` ON `pow_spent` (`expires_at`);--> statement-breakpoint
CREATE TABLE `spam_learning` (
	`app_id` text PRIMARY KEY NOT NULL,
	`factors` text DEFAULT '{}' NOT NULL,
	`not_spam` integer DEFAULT 0 NOT NULL,
	`marked_spam` integer DEFAULT 0 NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `apps` ADD `proof_of_work` text DEFAULT 'off' NOT NULL;--> statement-breakpoint
ALTER TABLE `apps` ADD `spam_events` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `feedback` ADD `spam_score` real;--> statement-breakpoint
ALTER TABLE `feedback` ADD `spam_reasons` text;--> statement-breakpoint
ALTER TABLE `feedback` ADD `spam_marked_at` integer;--> statement-breakpoint
CREATE INDEX `feedback_spam_idx` ON `feedback` (`org_id`,`id`) WHERE spam_marked_at IS NOT NULL;