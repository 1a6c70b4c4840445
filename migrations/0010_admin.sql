CREATE TABLE `admins` (
	`id` text PRIMARY KEY NOT NULL,
	`email` text NOT NULL,
	`password_hash` text NOT NULL,
	`is_owner` integer DEFAULT false NOT NULL,
	`totp_secret_enc` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `admins_email_uq` ON `admins` (`email`);--> statement-breakpoint
CREATE TABLE `admin_memberships` (
	`admin_id` text NOT NULL,
	`org_id` text NOT NULL,
	`role` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`admin_id`, `org_id`)
);
--> statement-breakpoint
CREATE INDEX `admin_memberships_org_idx` ON `admin_memberships` (`org_id`);--> statement-breakpoint
CREATE TABLE `admin_sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`token_hash` text NOT NULL,
	`admin_id` text NOT NULL,
	`csrf_token` text NOT NULL,
	`user_agent` text DEFAULT '' NOT NULL,
	`ip` text DEFAULT '' NOT NULL,
	`created_at` integer NOT NULL,
	`last_seen_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`revoked_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `admin_sessions_token_uq` ON `admin_sessions` (`token_hash`);--> statement-breakpoint
CREATE INDEX `admin_sessions_admin_idx` ON `admin_sessions` (`admin_id`);--> statement-breakpoint
CREATE TABLE `admin_setup_tokens` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`used_at` integer
);
--> statement-breakpoint
CREATE TABLE `admin_reads` (
	`admin_id` text NOT NULL,
	`feedback_id` text NOT NULL,
	`read_at` integer NOT NULL,
	PRIMARY KEY(`admin_id`, `feedback_id`)
);
--> statement-breakpoint
CREATE TABLE `audit_log` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text,
	`actor` text NOT NULL,
	`action` text NOT NULL,
	`target_id` text,
	`data` text DEFAULT '{}' NOT NULL,
	`ip` text,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `audit_log_org_idx` ON `audit_log` (`org_id`,`id`);
--> statement-breakpoint
CREATE TABLE `api_key_activity` (
	`key_id` text PRIMARY KEY NOT NULL,
	`created_by` text,
	`last_used_at` integer
);
--> statement-breakpoint
CREATE INDEX `events_feedback_idx` ON `events` (`org_id`, json_extract(`data`, '$.feedbackId'));
