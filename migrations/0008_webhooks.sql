CREATE TABLE `webhooks` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`app_id` text,
	`url` text NOT NULL,
	`event_types` text DEFAULT '[]' NOT NULL,
	`secret_sealed` text NOT NULL,
	`previous_secret_sealed` text,
	`previous_secret_until` integer,
	`cursor_seq` integer DEFAULT 0 NOT NULL,
	`enabled` integer DEFAULT true NOT NULL,
	`disabled_reason` text,
	`failing_since` integer,
	`created_at` integer NOT NULL,
	`deleted_at` integer
);
--> statement-breakpoint
CREATE INDEX `webhooks_org_idx` ON `webhooks` (`org_id`);--> statement-breakpoint
CREATE TABLE `webhook_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`webhook_id` text NOT NULL,
	`org_id` text NOT NULL,
	`event_id` text NOT NULL,
	`event_seq` integer NOT NULL,
	`event_type` text NOT NULL,
	`payload` text NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`schedule_index` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer,
	`lease_until` integer,
	`last_status` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_deliveries_event_uq` ON `webhook_deliveries` (`webhook_id`,`event_id`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_due_idx` ON `webhook_deliveries` (`status`,`next_attempt_at`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_created_idx` ON `webhook_deliveries` (`created_at`);--> statement-breakpoint
CREATE TABLE `webhook_attempts` (
	`id` text PRIMARY KEY NOT NULL,
	`delivery_id` text NOT NULL,
	`webhook_id` text NOT NULL,
	`org_id` text NOT NULL,
	`attempt` integer NOT NULL,
	`request_headers` text NOT NULL,
	`request_body` text NOT NULL,
	`response_status` integer,
	`response_body` text,
	`error` text,
	`latency_ms` integer NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `webhook_attempts_delivery_idx` ON `webhook_attempts` (`delivery_id`);--> statement-breakpoint
CREATE INDEX `webhook_attempts_created_idx` ON `webhook_attempts` (`created_at`);--> statement-breakpoint
CREATE TABLE `slack_connections` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`app_id` text,
	`channel` text NOT NULL,
	`bot_token_sealed` text NOT NULL,
	`signing_secret_sealed` text NOT NULL,
	`event_types` text DEFAULT '[]' NOT NULL,
	`cursor_seq` integer DEFAULT 0 NOT NULL,
	`last_error` text,
	`created_at` integer NOT NULL,
	`deleted_at` integer
);
--> statement-breakpoint
CREATE INDEX `slack_connections_org_idx` ON `slack_connections` (`org_id`);--> statement-breakpoint
CREATE TABLE `slack_threads` (
	`connection_id` text NOT NULL,
	`lead_feedback_id` text NOT NULL,
	`channel` text NOT NULL,
	`ts` text NOT NULL,
	`status` text NOT NULL,
	`duplicate_count` integer DEFAULT 0 NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`connection_id`, `lead_feedback_id`)
);
--> statement-breakpoint
CREATE TABLE `slack_users` (
	`org_id` text NOT NULL,
	`slack_team_id` text NOT NULL,
	`slack_user_id` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`org_id`, `slack_team_id`, `slack_user_id`)
);
