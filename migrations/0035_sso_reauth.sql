ALTER TABLE `admin_sessions` ADD `reauth_purpose` text;--> statement-breakpoint
ALTER TABLE `admin_sessions` ADD `reauth_at` integer;