CREATE TABLE `uploads` (
	`key` text PRIMARY KEY NOT NULL,
	`app_id` text NOT NULL,
	`org_id` text NOT NULL,
	`kind` text NOT NULL,
	`content_type` text NOT NULL,
	`byte_size` integer NOT NULL,
	`filename` text,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`uploaded_at` integer,
	`feedback_id` text
);
--> statement-breakpoint
CREATE INDEX `uploads_unreferenced_idx` ON `uploads` (`created_at`) WHERE feedback_id IS NULL;