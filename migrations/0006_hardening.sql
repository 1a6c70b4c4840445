ALTER TABLE `jobs` ADD `lease_owner` text;
--> statement-breakpoint
-- Reports a version before 0006 left raw (archived before the worker reached them, then merged as a
-- duplicate, which the process job used to skip): give each one a process job, which now scrubs it.
INSERT INTO `jobs` (`kind`, `feedback_id`, `run_after`, `attempts`, `created_at`)
SELECT 'process', `id`, 0, 0, 0 FROM `feedback` f
WHERE f.`redactions` IS NULL AND f.`status` NOT IN ('received', 'sanitizing')
  AND NOT EXISTS (SELECT 1 FROM `jobs` j WHERE j.`feedback_id` = f.`id` AND j.`kind` = 'process');
