CREATE TABLE `cluster_nodes` (
	`id` text PRIMARY KEY NOT NULL,
	`host` text NOT NULL,
	`pid` integer NOT NULL,
	`version` text NOT NULL,
	`started_at` integer NOT NULL,
	`heartbeat_at` integer NOT NULL,
	`roles` text DEFAULT '' NOT NULL
);
--> statement-breakpoint
CREATE TABLE `leases` (
	`name` text PRIMARY KEY NOT NULL,
	`holder` text NOT NULL,
	`token` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`acquired_at` integer NOT NULL
);

--> statement-breakpoint
ALTER TABLE `agent_runs` ADD `node_id` text;