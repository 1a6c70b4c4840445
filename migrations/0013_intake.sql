CREATE TABLE `credential_generation` (
	`id` integer PRIMARY KEY NOT NULL,
	`generation` integer NOT NULL
);--> statement-breakpoint
INSERT INTO `credential_generation` (`id`, `generation`) VALUES (1, 0);--> statement-breakpoint
CREATE TRIGGER `credential_generation_apps_insert` AFTER INSERT ON `apps` BEGIN UPDATE `credential_generation` SET `generation` = `generation` + 1 WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `credential_generation_apps_update` AFTER UPDATE ON `apps` BEGIN UPDATE `credential_generation` SET `generation` = `generation` + 1 WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `credential_generation_apps_delete` AFTER DELETE ON `apps` BEGIN UPDATE `credential_generation` SET `generation` = `generation` + 1 WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `credential_generation_api_keys_insert` AFTER INSERT ON `api_keys` BEGIN UPDATE `credential_generation` SET `generation` = `generation` + 1 WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `credential_generation_api_keys_update` AFTER UPDATE ON `api_keys` BEGIN UPDATE `credential_generation` SET `generation` = `generation` + 1 WHERE `id` = 1; END;--> statement-breakpoint
CREATE TRIGGER `credential_generation_api_keys_delete` AFTER DELETE ON `api_keys` BEGIN UPDATE `credential_generation` SET `generation` = `generation` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
ALTER TABLE `events` ADD `feedback_id` text;--> statement-breakpoint
CREATE INDEX `events_feedback_id_idx` ON `events` (`org_id`,`feedback_id`,`seq`) WHERE feedback_id IS NOT NULL;--> statement-breakpoint
DROP INDEX IF EXISTS `events_feedback_idx`;--> statement-breakpoint
CREATE INDEX `events_legacy_feedback_idx` ON `events` (`org_id`, json_extract(`data`, '$.feedbackId'), `seq`) WHERE feedback_id IS NULL;
