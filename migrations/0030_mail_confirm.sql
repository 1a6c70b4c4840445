CREATE TABLE `mail_confirmations` (
	`id` text PRIMARY KEY NOT NULL,
	`app_id` text NOT NULL,
	`org_id` text NOT NULL,
	`email_hash` text NOT NULL,
	`email_sealed` text,
	`state` text NOT NULL,
	`nonce` text,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer NOT NULL,
	`lease_until` integer,
	`last_error` text,
	`created_at` integer NOT NULL,
	`sent_at` integer,
	`confirmed_at` integer
);
--> statement-breakpoint
CREATE INDEX `mail_confirmations_due_idx` ON `mail_confirmations` (`next_attempt_at`) WHERE state = 'pending';--> statement-breakpoint
CREATE INDEX `mail_confirmations_app_sent_idx` ON `mail_confirmations` (`app_id`,`sent_at`);--> statement-breakpoint
CREATE INDEX `mail_confirmations_hash_sent_idx` ON `mail_confirmations` (`email_hash`,`sent_at`);--> statement-breakpoint
ALTER TABLE `feedback` ADD `notify_asked_at` integer;--> statement-breakpoint
CREATE INDEX `feedback_notify_ask_idx` ON `feedback` (`id`) WHERE notify_email_sealed IS NOT NULL AND notify_asked_at IS NULL AND submitted_mode = 'public';--> statement-breakpoint
ALTER TABLE `mail_outbox` ADD `needs_confirm` integer DEFAULT false NOT NULL;--> statement-breakpoint
-- A public-mode report's mail still waiting: its address was never confirmed (docs/email.md).
UPDATE `mail_outbox` SET `needs_confirm` = 1 WHERE `state` = 'pending' AND `feedback_id` IN (SELECT `id` FROM `feedback` WHERE `submitted_mode` = 'public');--> statement-breakpoint
-- A duplicate shows its lead's pull request (issue 36.3): the ones attached after the PR opened had none.
UPDATE `feedback` SET `merge_request_url` = (SELECT l.`merge_request_url` FROM `feedback` l WHERE l.`id` = `feedback`.`duplicate_of_id`) WHERE `duplicate_of_id` IS NOT NULL;
