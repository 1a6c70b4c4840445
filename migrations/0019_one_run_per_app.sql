-- Before the index: a second run of one App left in progress (two nodes could both start one before this
-- release) keeps only the newest as `running`; the others are marked failed, so the index can be built.
UPDATE `agent_runs` SET `status` = 'failed', `error` = 'marked failed by migration 0019: another run of this App was in progress at the same time'
  WHERE `status` = 'running' AND `id` NOT IN (SELECT MAX(`id`) FROM `agent_runs` WHERE `status` = 'running' GROUP BY `app_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `agent_runs_one_running_per_app_uq` ON `agent_runs` (`app_id`) WHERE status = 'running';