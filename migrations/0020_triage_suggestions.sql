CREATE TABLE `triage_decisions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`org_id` text NOT NULL,
	`app_id` text NOT NULL,
	`feedback_id` text NOT NULL,
	`lead_id` text NOT NULL,
	`kind` text NOT NULL,
	`score` real NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `triage_decisions_app_idx` ON `triage_decisions` (`app_id`,`id`);--> statement-breakpoint
ALTER TABLE `feedback` ADD `suggested_lead_id` text;--> statement-breakpoint
ALTER TABLE `feedback` ADD `suggested_score` real;--> statement-breakpoint
ALTER TABLE `feedback` ADD `suggested_reason` text;--> statement-breakpoint
ALTER TABLE `feedback` ADD `rejected_lead_ids` text;--> statement-breakpoint
ALTER TABLE `feedback` ADD `merge_score` real;--> statement-breakpoint
ALTER TABLE `feedback` ADD `merge_reason` text;