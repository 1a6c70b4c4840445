CREATE TABLE `agent_runs` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`app_id` text NOT NULL,
	`feedback_id` text NOT NULL,
	`provider` text NOT NULL,
	`model` text,
	`status` text NOT NULL,
	`tokens_in` integer DEFAULT 0 NOT NULL,
	`tokens_out` integer DEFAULT 0 NOT NULL,
	`cost_usd` real DEFAULT 0 NOT NULL,
	`pr_url` text,
	`branch` text NOT NULL,
	`guardrail_reason` text,
	`error` text,
	`timings` text NOT NULL,
	`summary` text,
	`output_tail` text,
	`started_at` integer,
	`ended_at` integer,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `agent_runs_feedback_idx` ON `agent_runs` (`feedback_id`,`id`);--> statement-breakpoint
CREATE INDEX `agent_runs_app_idx` ON `agent_runs` (`app_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `agent_runs_status_idx` ON `agent_runs` (`status`);--> statement-breakpoint
CREATE TABLE `repo_connections` (
	`app_id` text PRIMARY KEY NOT NULL,
	`git_url` text NOT NULL,
	`base_branch` text DEFAULT 'main' NOT NULL,
	`host_kind` text NOT NULL,
	`host_api_url` text,
	`host_repo` text,
	`host_token_enc` text,
	`agent_provider` text NOT NULL,
	`agent_command` text,
	`model` text,
	`timeout_seconds` integer NOT NULL,
	`pr_mode` text NOT NULL,
	`verify_command` text,
	`max_files` integer NOT NULL,
	`max_lines` integer NOT NULL,
	`deny_paths` text DEFAULT '[]' NOT NULL,
	`runs_per_day` integer NOT NULL,
	`max_cost_usd_per_month` real NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
