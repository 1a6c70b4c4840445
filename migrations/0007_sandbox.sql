ALTER TABLE `agent_runs` ADD `sandbox_pid` integer;--> statement-breakpoint
ALTER TABLE `agent_runs` ADD `sandbox_start` text;
