ALTER TABLE `apps` ADD `replay_mode` text DEFAULT 'off' NOT NULL;--> statement-breakpoint
ALTER TABLE `apps` ADD `replay_seconds` integer DEFAULT 60 NOT NULL;--> statement-breakpoint
ALTER TABLE `uploads` ADD `replay_state` text;--> statement-breakpoint
CREATE INDEX `uploads_replay_pending_idx` ON `uploads` (`created_at`) WHERE replay_state = 'pending' AND feedback_id IS NOT NULL;