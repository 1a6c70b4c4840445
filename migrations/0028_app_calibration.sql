CREATE TABLE `app_calibration` (
	`app_id` text PRIMARY KEY NOT NULL,
	`scored` integer NOT NULL,
	`median` real NOT NULL,
	`updated_at` integer NOT NULL
);
