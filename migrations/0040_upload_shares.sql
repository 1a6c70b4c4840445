CREATE TABLE `upload_shares` (
	`key` text NOT NULL,
	`feedback_id` text NOT NULL,
	PRIMARY KEY(`key`, `feedback_id`)
);
--> statement-breakpoint
CREATE INDEX `upload_shares_feedback_idx` ON `upload_shares` (`feedback_id`);--> statement-breakpoint
-- Reports stored before this table that list an upload another report owns (attachments, then screenshots).
INSERT OR IGNORE INTO `upload_shares` (`key`, `feedback_id`)
  SELECT u.key, f.id FROM feedback f, json_each(CASE WHEN json_valid(f.attachments) THEN f.attachments ELSE '[]' END) a, uploads u
  WHERE f.attachments IS NOT NULL AND u.key = json_extract(a.value, '$.key') AND u.feedback_id IS NOT NULL AND u.feedback_id <> f.id;
--> statement-breakpoint
INSERT OR IGNORE INTO `upload_shares` (`key`, `feedback_id`)
  SELECT u.key, f.id FROM feedback f, uploads u
  WHERE f.component_target IS NOT NULL AND json_valid(f.component_target)
    AND u.key = json_extract(f.component_target, '$.screenshotKey') AND u.feedback_id IS NOT NULL AND u.feedback_id <> f.id;
