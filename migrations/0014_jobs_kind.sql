CREATE INDEX `jobs_kind_due_idx` ON `jobs` (`kind`,`run_after`);
