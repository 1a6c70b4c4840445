CREATE TABLE `git_host_deliveries` (
	`app_id` text NOT NULL,
	`delivery_id` text NOT NULL,
	`received_at` integer NOT NULL,
	PRIMARY KEY(`app_id`, `delivery_id`)
);
--> statement-breakpoint
CREATE INDEX `git_host_deliveries_received_idx` ON `git_host_deliveries` (`received_at`);--> statement-breakpoint
ALTER TABLE `agent_runs` ADD `trigger` text DEFAULT 'report' NOT NULL;--> statement-breakpoint
ALTER TABLE `agent_runs` ADD `review_text` text;--> statement-breakpoint
ALTER TABLE `repo_connections` ADD `webhook_secret_enc` text;