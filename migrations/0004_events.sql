CREATE TABLE `event_counters` (
	`org_id` text PRIMARY KEY NOT NULL,
	`last_seq` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `events` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`app_id` text,
	`seq` integer NOT NULL,
	`type` text NOT NULL,
	`data` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `events_org_seq_uq` ON `events` (`org_id`,`seq`);--> statement-breakpoint
CREATE INDEX `events_created_idx` ON `events` (`created_at`);