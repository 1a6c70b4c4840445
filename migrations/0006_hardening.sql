ALTER TABLE `jobs` ADD `lease_owner` text;
