CREATE TABLE `api_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`name` text DEFAULT '' NOT NULL,
	`key_hash` text NOT NULL,
	`key_prefix` text NOT NULL,
	`created_at` integer NOT NULL,
	`revoked_at` integer,
	FOREIGN KEY (`org_id`) REFERENCES `orgs`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_hash_uq` ON `api_keys` (`key_hash`);--> statement-breakpoint
CREATE INDEX `api_keys_org_idx` ON `api_keys` (`org_id`);--> statement-breakpoint
CREATE TABLE `apps` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`slug` text NOT NULL,
	`name` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`public_key` text NOT NULL,
	`public_submission_enabled` integer DEFAULT true NOT NULL,
	`processing_mode` text DEFAULT 'manual' NOT NULL,
	`batch_enabled` integer DEFAULT false NOT NULL,
	`batch_window_hours` integer DEFAULT 24 NOT NULL,
	`allowed_origins` text DEFAULT '[]' NOT NULL,
	`signing_secret_enc` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`deleted_at` integer,
	FOREIGN KEY (`org_id`) REFERENCES `orgs`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `apps_public_key_uq` ON `apps` (`public_key`);--> statement-breakpoint
CREATE UNIQUE INDEX `apps_org_slug_uq` ON `apps` (`org_id`,`slug`) WHERE deleted_at IS NULL;--> statement-breakpoint
CREATE INDEX `apps_org_idx` ON `apps` (`org_id`);--> statement-breakpoint
CREATE TABLE `orgs` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `feedback` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`app_id` text NOT NULL,
	`status` text NOT NULL,
	`version` integer DEFAULT 0 NOT NULL,
	`severity` text,
	`text` text NOT NULL,
	`url` text,
	`user_agent` text,
	`viewport` text,
	`console_logs` text,
	`attachments` text,
	`component_target` text,
	`metadata` text,
	`submitted_mode` text NOT NULL,
	`external_user_id` text,
	`email` text,
	`submitter_name` text,
	`user_context` text,
	`redactions` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`processed_at` integer,
	`merge_request_url` text,
	`duplicate_of_id` text,
	`duplicate_count` integer DEFAULT 0 NOT NULL,
	`last_duplicate_at` integer,
	`theme` text,
	`consolidated_text` text,
	FOREIGN KEY (`org_id`) REFERENCES `orgs`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`app_id`) REFERENCES `apps`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `feedback_org_id_idx` ON `feedback` (`org_id`,`id`);--> statement-breakpoint
CREATE INDEX `feedback_app_id_idx` ON `feedback` (`app_id`,`id`);--> statement-breakpoint
CREATE INDEX `feedback_org_status_idx` ON `feedback` (`org_id`,`status`,`id`);--> statement-breakpoint
CREATE INDEX `feedback_app_status_idx` ON `feedback` (`app_id`,`status`,`id`);--> statement-breakpoint
CREATE INDEX `feedback_dup_idx` ON `feedback` (`duplicate_of_id`) WHERE duplicate_of_id IS NOT NULL;--> statement-breakpoint
CREATE TABLE `idempotency_keys` (
	`app_id` text NOT NULL,
	`key` text NOT NULL,
	`request_hash` text NOT NULL,
	`status_code` integer NOT NULL,
	`response_body` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`app_id`, `key`)
);
--> statement-breakpoint
CREATE INDEX `idempotency_created_idx` ON `idempotency_keys` (`created_at`);--> statement-breakpoint
CREATE TABLE `jobs` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`kind` text NOT NULL,
	`feedback_id` text,
	`run_after` integer NOT NULL,
	`lease_until` integer,
	`attempts` integer DEFAULT 0 NOT NULL,
	`last_error` text,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `jobs_due_idx` ON `jobs` (`run_after`);--> statement-breakpoint
CREATE INDEX `jobs_feedback_idx` ON `jobs` (`feedback_id`);