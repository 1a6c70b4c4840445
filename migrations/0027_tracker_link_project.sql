DROP INDEX `tracker_issues_issue_uq`;--> statement-breakpoint
ALTER TABLE `tracker_issues` ADD `project` text DEFAULT '' NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `tracker_issues_issue_uq` ON `tracker_issues` (`app_id`,`kind`,`project`,`issue_id`);--> statement-breakpoint
-- Existing links were made in the App's current project (a link of another kind is frozen anyway).
UPDATE `tracker_issues` SET `project` = (SELECT c.`project` FROM `tracker_connections` c WHERE c.`app_id` = `tracker_issues`.`app_id` AND c.`kind` = `tracker_issues`.`kind`) WHERE `project` = '' AND EXISTS (SELECT 1 FROM `tracker_connections` c WHERE c.`app_id` = `tracker_issues`.`app_id` AND c.`kind` = `tracker_issues`.`kind`);
