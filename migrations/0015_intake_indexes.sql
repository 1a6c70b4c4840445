CREATE TRIGGER `events_seq_floor` AFTER DELETE ON `events`
WHEN NOT EXISTS (SELECT 1 FROM `events` WHERE `org_id` = old.`org_id` AND `seq` > old.`seq`)
BEGIN
  INSERT INTO `event_counters` (`org_id`, `last_seq`) VALUES (old.`org_id`, old.`seq`)
  ON CONFLICT (`org_id`) DO UPDATE SET `last_seq` = MAX(`last_seq`, excluded.`last_seq`);
END;
--> statement-breakpoint
DROP INDEX IF EXISTS `events_created_idx`;
